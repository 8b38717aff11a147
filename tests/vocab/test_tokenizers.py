"""The tokenizer interface: registry, SentencePiece / T2T / whitespace backends against the code they
wrap, SentencePiece trainer options reaching the trainer, save/load, and bad model files."""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import sentencepiece

from tests.vocab.multilingual import SAMPLE, sample_lines
from tokenmill.errors import ConfigError
from tokenmill.vocab.dictionary import Dictionary
from tokenmill.vocab.sentencepiece import SentencePieceEncoder, SentencePieceOptions, train_sentencepiece
from tokenmill.vocab.t2t_backend import t2t_sample
from tokenmill.vocab.t2t_subword import SubwordTextEncoder
from tokenmill.vocab.tokenizer import (
    BACKENDS,
    Tokenizer,
    get_backend,
    load_saved,
    load_tokenizer,
    register_backend,
    train_tokenizer,
)
from tokenmill.vocab.whitespace import WhitespaceTokenizer

LINES = sample_lines()


def per_line(flat: np.ndarray, lengths: np.ndarray) -> list[list[int]]:
    assert flat.dtype == np.int64 and lengths.dtype == np.int64 and int(lengths.sum()) == len(flat)
    return [part.tolist() for part in np.split(flat, np.cumsum(lengths)[:-1])] if len(lengths) else []


def direct_spm(lines: list[str], **options) -> sentencepiece.SentencePieceProcessor:
    """Train with SentencePiece itself, in memory."""
    model = io.BytesIO()
    trainer = sentencepiece.SentencePieceTrainer
    trainer.train(sentence_iterator=iter(lines), model_writer=model, minloglevel=2, **options)
    return sentencepiece.SentencePieceProcessor(model_proto=model.getvalue())


def pieces(processor: sentencepiece.SentencePieceProcessor) -> list[tuple[str, float, bool]]:
    return [(processor.id_to_piece(i), processor.get_score(i), processor.is_control(i))
            for i in range(processor.get_piece_size())]


# ----------------------------------------------------------------------------- SentencePiece
# What tokenmill has always passed (the trainer sees the whole reservoir sample, from memory).
BASE = dict(input_sentence_size=0, shuffle_input_sentence=False, hard_vocab_limit=False, num_threads=1,
            max_sentence_length=4192, byte_fallback=False, user_defined_symbols=[])


def test_default_options_train_what_they_always_did(tmp_path):
    tok = train_tokenizer("sentencepiece", LINES, {"vocab_size": 400, "character_coverage": 1.0}, tmp_path / "a.model")
    direct = direct_spm(LINES, vocab_size=400, model_type="unigram", character_coverage=1.0, **BASE)
    assert tok.path.read_bytes() == direct.serialized_model_proto()


def test_trainer_options_reach_the_trainer(tmp_path):
    options = SentencePieceOptions(
        vocab_size=300,
        model_type="bpe",
        character_coverage=1.0,
        normalization_rule_name="nmt_nfkc_cf",
        split_digits=True,
        control_symbols=["<sep>", "<cls>"],
        user_defined_symbols=["__en__"],
        extra_options={"max_sentencepiece_length": 4, "split_by_whitespace": True, "pad_id": 3, "unk_id": 0,
                       "bos_id": 1, "eos_id": 2},
    )
    tok = train_tokenizer("sentencepiece", LINES, options, tmp_path / "spm.model")
    direct = direct_spm(
        LINES,
        **{**BASE, "vocab_size": 300, "model_type": "bpe", "character_coverage": 1.0,
           "normalization_rule_name": "nmt_nfkc_cf", "split_digits": True, "control_symbols": ["<sep>", "<cls>"],
           "user_defined_symbols": ["__en__"], "max_sentencepiece_length": 4, "split_by_whitespace": True,
           "pad_id": 3, "unk_id": 0, "bos_id": 1, "eos_id": 2},
    )
    assert pieces(tok.processor) == pieces(direct)
    assert tok.path.read_bytes() == direct.serialized_model_proto()
    # and they did what they say
    assert tok.special_ids == {"bos": 1, "eos": 2, "pad": 3, "unk": 0, "eod": 2}
    normal = [p for p, _, control in pieces(direct) if not control and p not in ("<unk>", "__en__")]
    assert max(len(p) for p in normal) <= 4
    case = per_line(*tok.encode_batch(["THE DOCTOR", "the doctor"]))
    assert case[0] == case[1]  # case folded
    digits = [tok.id_to_token(i) for i in per_line(*tok.encode_batch(["2024"]))[0]]
    assert [d.lstrip("▁") for d in digits if d != "▁"] == ["2", "0", "2", "4"]
    sep = tok.token_to_id("<sep>")
    assert sep is not None and sep not in per_line(*tok.encode_batch(["a <sep> b"]))[0]  # control: never from text
    assert tok.token_to_id("__en__") in per_line(*tok.encode_batch(["__en__ hello"]))[0]
    assert tok.token_to_id("nonexistent piece") is None


Processor = sentencepiece.SentencePieceProcessor


def train_both(tmp_path: Path, lines: list[str], **settings: object) -> tuple[Tokenizer, Processor]:
    """``settings`` trained through tokenmill and, under the same names, by SentencePiece's own trainer."""
    tok = train_tokenizer("sentencepiece", lines, SentencePieceOptions(**settings), tmp_path / "ours.model")
    return tok, direct_spm(lines, **{**BASE, "model_type": "unigram", **settings})


def encoded_pieces(tok: Tokenizer, line: str) -> list[str]:
    return [tok.id_to_token(i) for i in per_line(*tok.encode_batch([line]))[0]]


UNSEEN = "\ua66e"  # CYRILLIC LETTER MULTIOCULAR O: in no training line


def byte_fallback_encodes_unseen_characters_as_bytes(
    tok: Tokenizer, direct: Processor, tmp_path: Path, lines: list[str]
) -> None:
    assert UNSEEN not in "".join(lines)
    assert [p for p in encoded_pieces(tok, UNSEEN) if p != "\u2581"] == ["<0xEA>", "<0x99>", "<0xAE>"]
    assert tok.token_to_id("<0x00>") is not None and tok.token_to_id("<0xFF>") is not None


def long_lines_are_skipped(
    tok: Tokenizer, direct: Processor, tmp_path: Path, lines: list[str]
) -> None:
    # the long line (the only one holding UNSEEN) was left out of training; without the limit it is not
    assert UNSEEN not in {p for p, _, _ in pieces(direct)}
    default = direct_spm(lines, **{**BASE, "vocab_size": 400, "model_type": "unigram", "character_coverage": 1.0})
    assert UNSEEN in {p for p, _, _ in pieces(default)}


def shuffling_changes_nothing_but_the_recorded_switch(
    tok: Tokenizer, direct: Processor, tmp_path: Path, lines: list[str]
) -> None:
    # the trainer is handed the whole sample (its input_sentence_size is 0), so it never samples or shuffles
    unshuffled = train_sentencepiece(lines, tmp_path / "plain.model", SentencePieceOptions(vocab_size=400,
                                                                                         character_coverage=1.0))
    assert pieces(tok.processor) == pieces(SentencePieceEncoder(unshuffled).processor)
    assert tok.path.read_bytes() != unshuffled.read_bytes()  # the model records the switch as given


def the_vocabulary_is_reached_exactly(
    tok: Tokenizer, direct: Processor, tmp_path: Path, lines: list[str]
) -> None:
    assert tok.vocab_size == 400  # (its failing side: test_an_unreachable_hard_vocab_limit_is_a_config_error)


def char_pieces_are_single_characters(
    tok: Tokenizer, direct: Processor, tmp_path: Path, lines: list[str]
) -> None:
    normal = [p for p, _, control in pieces(direct) if not control and p != "<unk>"]
    assert normal and all(len(p) == 1 for p in normal)
    assert encoded_pieces(tok, "the market") == ["\u2581", "t", "h", "e", "\u2581", "m", "a", "r", "k", "e", "t"]


def word_pieces_are_whole_words(
    tok: Tokenizer, direct: Processor, tmp_path: Path, lines: list[str]
) -> None:
    normal = [p for p, _, control in pieces(direct) if not control and p != "<unk>"]
    assert normal and all("\u2581" not in p[1:] for p in normal)  # never more than one word
    assert encoded_pieces(tok, "the market river") == ["\u2581the", "\u2581market", "\u2581river"]


def identity_keeps_compatibility_characters(
    tok: Tokenizer, direct: Processor, tmp_path: Path, lines: list[str]
) -> None:
    assert "".join(encoded_pieces(tok, "\ufb01")).strip("\u2581") == "\ufb01"  # nmt_nfkc would make it "fi"


# a line past every other's length in bytes, the only one that holds UNSEEN
LIMIT = max(len(line.encode()) for line in LINES) + 1
LONG = [*LINES, " ".join([UNSEEN * 3] * 40)]


@pytest.mark.parametrize(
    ("lines", "settings", "effect"),
    [
        (LINES, dict(vocab_size=600, byte_fallback=True), byte_fallback_encodes_unseen_characters_as_bytes),
        (LONG, dict(vocab_size=400, max_sentence_length=LIMIT), long_lines_are_skipped),
        (LINES, dict(vocab_size=400, shuffle_input_sentence=True), shuffling_changes_nothing_but_the_recorded_switch),
        (LINES, dict(vocab_size=400, hard_vocab_limit=True), the_vocabulary_is_reached_exactly),
        (LINES, dict(vocab_size=400, model_type="char"), char_pieces_are_single_characters),
        (LINES, dict(vocab_size=400, model_type="word"), word_pieces_are_whole_words),
        (LINES, dict(vocab_size=400, normalization_rule_name="identity"), identity_keeps_compatibility_characters),
    ],
    ids=["byte_fallback", "max_sentence_length", "shuffle_input_sentence", "hard_vocab_limit", "char", "word",
         "identity"],
)
def test_each_trainer_option_trains_what_spm_train_does(tmp_path, lines, settings, effect):
    tok, direct = train_both(tmp_path, lines, character_coverage=1.0, **settings)
    assert pieces(tok.processor) == pieces(direct)
    assert tok.path.read_bytes() == direct.serialized_model_proto()
    effect(tok, direct, tmp_path, lines)


def test_an_unreachable_hard_vocab_limit_is_a_config_error(tmp_path):
    lines = ["a b c", "a b", "c a"] * 10
    match = r"--vocab-size 100 cannot be reached with --hard-vocab-limit: .* at most 10 pieces"
    with pytest.raises(ConfigError, match=match) as caught:
        train_sentencepiece(lines, tmp_path / "m.model", SentencePieceOptions(vocab_size=100, hard_vocab_limit=True))
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "m.model").exists()
    # without the limit the trainer stops short of the size, as spm_train does
    tok, direct = train_both(tmp_path, lines, vocab_size=100, character_coverage=1.0)
    assert tok.vocab_size < 100 and tok.path.read_bytes() == direct.serialized_model_proto()


@pytest.mark.parametrize(
    ("options", "match"),
    [
        (dict(extra_options={"no_such_option": 1}), "no trainer option 'no_such_option'"),
        (dict(extra_options={"split_by_number": "maybe"}), "'maybe' for option 'split_by_number'"),
        (dict(extra_options={"split_digits": True}), "set the split_digits setting instead"),
        (dict(extra_options={"input_sentence_size": 10}), "tokenmill sets it itself"),
        (dict(extra_options={"pad_id": [1]}), "needs a string, number or boolean"),
        (dict(normalization_rule_name="nfc"), "normalization-rule-name must be one of"),
    ],
)
def test_bad_trainer_options_are_config_errors_naming_the_option(tmp_path, options, match):
    with pytest.raises(ConfigError, match=match) as caught:
        train_sentencepiece(LINES, tmp_path / "m.model", SentencePieceOptions(vocab_size=100, **options))
    assert "\n" not in str(caught.value)


def test_sentencepiece_backend_equals_the_encoder(tmp_path):
    tok = train_tokenizer("sentencepiece", LINES, {"vocab_size": 1000, "byte_fallback": True}, tmp_path / "spm.model")
    encoder = SentencePieceEncoder(tok.path)
    assert isinstance(tok, Tokenizer) and tok.name == "sentencepiece" and tok.vocab_size == encoder.vocab_size
    flat, lengths = encoder.encode_flat(LINES, num_threads=2)
    expected = per_line(flat.astype(np.int64), lengths)
    assert per_line(*tok.encode_batch(LINES, num_threads=2)) == expected
    assert tok.decode(expected[0]) == LINES[0]
    assert tok.special_ids == {"bos": 1, "eos": 2, "unk": 0, "eod": 2}
    written = tok.save(tmp_path / "out", tag="en")
    assert [p.name for p in written] == ["spm.en.model", "spm.en.vocab", "tokenmill-tokenizer.en.json"]
    again = load_saved(tmp_path / "out", tag="en")
    assert again.fingerprint() == tok.fingerprint()
    # the fingerprint follows the model's content, not its name
    other = train_tokenizer("sentencepiece", LINES, {"vocab_size": 450}, tmp_path / "other.model")
    assert other.fingerprint() != tok.fingerprint()
    assert load_tokenizer("sentencepiece", written[0]).fingerprint() == tok.fingerprint()


def test_a_sentencepiece_model_is_loaded_once_per_content(tmp_path):
    """prepare's stages ask for the given model, its working copy and its published copy: one load serves
    them all (each caller sees the path it named); other bytes under a known path load anew."""
    first = train_tokenizer("sentencepiece", LINES, {"vocab_size": 450}, tmp_path / "a" / "spm.model")
    copy = tmp_path / "b" / "spm.model"
    copy.parent.mkdir()
    copy.write_bytes(first.path.read_bytes())
    one, two = load_tokenizer("sentencepiece", first.path), load_tokenizer("sentencepiece", copy)
    assert one.processor is two.processor and (one.path, two.path) == (first.path, copy)
    assert per_line(*two.encode_batch(LINES)) == per_line(*first.encode_batch(LINES))
    train_tokenizer("sentencepiece", LINES, {"vocab_size": 500}, copy)  # the same path, another model
    other = load_tokenizer("sentencepiece", copy)
    assert other.processor is not one.processor and other.vocab_size == 500


# ----------------------------------------------------------------------------- T2T subword
def test_t2t_backend_equals_subword_text_encoder(tmp_path):
    paths = [SAMPLE / "train.en", SAMPLE / "train.zh"]
    reserved = ["<pad>", "<EOS>", "__en__"]
    existing = SubwordTextEncoder.build_from_files(paths, 300, file_byte_budget=3000, reserved_tokens=reserved)
    tok = train_tokenizer(
        "t2t-subword", t2t_sample(paths, 3000), {"target_size": 300, "reserved_tokens": reserved},
        tmp_path / "vocab.subwords",
    )
    assert isinstance(tok, Tokenizer)
    assert tok.encoder.all_subtoken_strings == existing.all_subtoken_strings
    assert per_line(*tok.encode_batch(LINES)) == [existing.encode(line) for line in LINES]
    assert tok.decode(existing.encode(LINES[0])) == LINES[0]
    assert tok.special_ids == {"eos": 1, "pad": 0, "eod": 1} and tok.vocab_size == existing.vocab_size
    assert tok.id_to_token(2) == "\\u\\uen\\u\\u_" and tok.token_to_id(tok.id_to_token(2)) == 2  # T2T-escaped
    written = tok.save(tmp_path / "out", tag="de")
    assert [p.name for p in written] == ["vocab.de.subwords", "tokenmill-tokenizer.de.json"]
    assert SubwordTextEncoder.load(written[0]).all_subtoken_strings == existing.all_subtoken_strings
    with pytest.raises(ConfigError, match="must start with <pad>, <EOS>"):
        train_tokenizer("t2t-subword", LINES, {"reserved_tokens": ["<EOS>"]}, tmp_path / "x.subwords")


# ----------------------------------------------------------------------------- whitespace
def test_whitespace_backend_is_a_fairseq_dictionary(tmp_path):
    counts = Counter(token for line in LINES[:300] for token in line.split())
    tok = WhitespaceTokenizer.from_counts(counts, tmp_path / "dict.txt", threshold=2)
    dictionary = Dictionary.load(tmp_path / "dict.txt")
    assert tok.vocab_size == len(dictionary) and len(dictionary) % 8 == 0
    expected = [dictionary.encode_tokens(line.split(), append_eos=False).tolist() for line in LINES]
    assert per_line(*tok.encode_batch(LINES)) == expected
    assert any(3 in ids for ids in expected)  # unknown words are <unk>
    assert tok.special_ids == {"bos": 0, "eos": 2, "pad": 1, "unk": 3, "eod": 2}
    assert tok.decode(expected[0]) == " ".join(LINES[0].split())
    assert tok.id_to_token(4) == dictionary.symbols[4] and tok.token_to_id(dictionary.symbols[4]) == 4
    written = tok.save(tmp_path / "out", tag="en")
    assert [p.name for p in written] == ["dict.en.txt", "tokenmill-tokenizer.en.json"]
    assert load_saved(tmp_path / "out", tag="en").fingerprint() == tok.fingerprint()
    with pytest.raises(ConfigError, match="cannot be trained"):
        train_tokenizer("whitespace", LINES, None, tmp_path / "d.txt")


# ----------------------------------------------------------------------------- registry and bad files
def test_registry():
    assert set(BACKENDS) == {"sentencepiece", "hf", "tiktoken", "t2t-subword", "whitespace"}
    for name in BACKENDS:
        assert get_backend(name).name == name
    with pytest.raises(ConfigError, match="unknown tokenizer 'bert'"):
        get_backend("bert")
    with pytest.raises(ConfigError, match="no setting 'vocabsize'"):
        train_tokenizer("sentencepiece", LINES, {"vocabsize": 10}, "/nonexistent/x.model")
    with pytest.raises(ConfigError, match="no training lines"):
        train_tokenizer("hf", [], None, "/nonexistent/x.json")
    register_backend("fake", "tokenmill_no_such_module:Fake", "fake model", extra="fake")
    try:
        with pytest.raises(ConfigError, match=r"needs tokenmill_no_such_module: pip install 'tokenmill\[fake\]'"):
            load_tokenizer("fake", "x")
    finally:
        del BACKENDS["fake"]


@pytest.fixture(scope="module")
def model_files(tmp_path_factory) -> dict[str, Path]:
    """One model file of each backend."""
    root = tmp_path_factory.mktemp("models")
    files = {
        "sentencepiece": train_tokenizer("sentencepiece", LINES, {"vocab_size": 600}, root / "spm.model").path,
        "hf": train_tokenizer("hf", LINES, {"vocab_size": 400}, root / "tokenizer.json").path,
        "t2t-subword": train_tokenizer("t2t-subword", LINES, {"target_size": 300}, root / "vocab.subwords").path,
        "whitespace": WhitespaceTokenizer.from_counts(Counter("a b c a".split()), root / "dict.txt").path,
    }
    ranks = root / "ranks.tiktoken"
    import base64

    ranks.write_bytes(b"".join(base64.b64encode(bytes([b])) + b" %d\n" % b for b in range(256)))
    files["tiktoken"] = ranks
    return files


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_every_backend_loads_its_own_file_and_rejects_the_others(model_files, backend, tmp_path):
    tok = load_tokenizer(backend, model_files[backend])
    assert isinstance(tok, Tokenizer) and tok.name == backend
    flat, lengths = tok.encode_batch(["a b c", "", "Der Käse 猫"], num_threads=2)
    assert flat.dtype == lengths.dtype == np.int64 and lengths.tolist()[1] == 0
    assert set(tok.special_ids) <= {"bos", "eos", "pad", "unk", "eod"} and "eod" in tok.special_ids
    for other, path in model_files.items():
        if other == backend:
            continue
        with pytest.raises(ConfigError) as caught:
            load_tokenizer(backend, path)
        message = str(caught.value)
        assert "\n" not in message and str(path) in message, message
        assert f"use the {other!r} tokenizer" in message, message  # the fix names the right backend
    with pytest.raises(ConfigError, match="does not exist"):
        load_tokenizer(backend, tmp_path / "missing")
    truncated = tmp_path / "truncated"
    truncated.write_bytes(model_files[backend].read_bytes()[:100])
    if backend not in ("whitespace", "t2t-subword"):  # word lists cut short are still word lists
        with pytest.raises(ConfigError) as caught:
            load_tokenizer(backend, truncated)
        assert "\n" not in str(caught.value) and str(truncated) in str(caught.value)


def test_load_saved_without_a_manifest(tmp_path):
    with pytest.raises(ConfigError, match="holds no saved tokenizer"):
        load_saved(tmp_path)
    (tmp_path / "tokenmill-tokenizer.json").write_text("{}")
    with pytest.raises(ConfigError, match="not a tokenizer manifest"):
        load_saved(tmp_path)
    (tmp_path / "tokenmill-tokenizer.json").write_text(json.dumps({"backend": "hf", "model": "tokenizer.json"}))
    with pytest.raises(ConfigError, match="does not exist"):
        load_saved(tmp_path)
