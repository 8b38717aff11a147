"""Every vocabulary file a tokenizer or dictionary loader reads survives damage: a mutated ``spm.model``,
``tokenizer.json``, ``.tiktoken``, ``vocab.subwords``, ``dict.txt`` or ``tokenmill-tokenizer.json`` gives one
tokenmill error naming the file, or loads a tokenizer whose ids stay inside its vocabulary (T2T's also
round-trip). SentencePiece and ``tokenizers`` parse in native code: every read runs in a child interpreter
(``tests/survive``), so a segfault is a failure, not a lost test run."""

from __future__ import annotations

import json
import shutil
import tracemalloc

import pytest
import sentencepiece
from hypothesis import given
from hypothesis import strategies as st

from tests.survive.harness import budget, mutated, survived
from tests.survive.mutations import byte_edits, json_edits, line_edits
from tokenmill.errors import ConfigError, FormatError
from tokenmill.store.manifest import verify_directory
from tokenmill.vocab.dictionary import Dictionary
from tokenmill.vocab.t2t_subword import SubwordTextEncoder
from tokenmill.vocab.tiktoken_ranks import ranks_from_byte_level_bpe, write_ranks
from tokenmill.vocab.tokenizer import load_saved, load_tokenizer


@budget(40)
@given(st.data())
def test_a_damaged_sentencepiece_model_is_refused_or_encodes_in_range(survive_seeds, sandbox, data):
    seed = survive_seeds.spm
    edit = data.draw(byte_edits(seed.stat().st_size), label="edit")
    with mutated(seed, None, edit) as copy:
        survived(sandbox.call("tokenizer", backend="sentencepiece", path=str(copy)), [copy.name])
        survived(sandbox.call("cli", args=["inspect", str(survive_seeds.lm / "train"), "--spm", str(copy),
                                           "--range", "0:3"]), [copy.name])


@budget(30)
@given(st.data())
def test_a_damaged_tokenizer_json_is_refused_or_encodes_in_range(survive_seeds, sandbox, data):
    seed = survive_seeds.tokenizer_json
    edit = data.draw(json_edits(seed.read_bytes()), label="edit")
    with mutated(seed, None, edit) as copy:
        survived(sandbox.call("tokenizer", backend="hf", path=str(copy)), [copy.name])
        survived(sandbox.call("bpe_ranks", path=str(copy)), [copy.name])


@budget(30)
@given(st.data())
def test_damaged_tiktoken_ranks_are_refused_or_encode_in_range(survive_seeds, sandbox, data):
    seed = survive_seeds.tiktoken
    edit = data.draw(line_edits(seed.read_bytes()), label="edit")
    with mutated(seed, None, edit) as copy:
        survived(sandbox.call("tokenizer", backend="tiktoken", path=str(copy)), [copy.name])


@budget(30)
@given(st.data())
def test_a_damaged_t2t_vocab_is_refused_or_round_trips(survive_seeds, sandbox, data):
    seed = survive_seeds.subwords
    edit = data.draw(line_edits(seed.read_bytes()), label="edit")
    with mutated(seed, None, edit) as copy:
        survived(sandbox.call("tokenizer", backend="t2t-subword", path=str(copy)), [copy.name])


@budget(30)
@given(st.data())
def test_a_damaged_dictionary_is_refused_or_read_line_for_line(survive_seeds, sandbox, data):
    seed = survive_seeds.pair / "dict.en.txt"
    edit = data.draw(line_edits(seed.read_bytes()), label="edit")
    with mutated(seed, None, edit) as copy:
        survived(sandbox.call("dictionary", path=str(copy)), [copy.name])
        survived(sandbox.call("cli", args=["inspect", str(survive_seeds.pair / "train.en-de.en"), "--dict", str(copy),
                                           "--range", "0:3"]), [copy.name])


@budget(30)
@given(st.data())
def test_a_damaged_saved_tokenizer_is_refused_or_loads_in_range(survive_seeds, sandbox, data):
    relative = data.draw(st.sampled_from(["tokenmill-tokenizer.json", "spm.model"]), label="file")
    seed = survive_seeds.lm / relative
    edit = data.draw(json_edits(seed.read_bytes()) if relative.endswith(".json") else byte_edits(seed.stat().st_size),
                     label="edit")
    with mutated(survive_seeds.lm, relative, edit) as copy:
        survived(sandbox.call("saved_tokenizer", directory=str(copy)), [relative, "spm.model"])


# ------------------------------------------------------------------ the defects these found, one test each
def _bytes_ranks(extra: dict[bytes, int] | None = None) -> dict[bytes, int]:
    return {bytes([b]): b for b in range(256)} | (extra or {})


def test_a_dictionary_that_is_not_utf8_is_a_format_error_and_verify_reports_it(survive_seeds, tmp_path):
    """flip[(0, 7)] of dict.en.txt: a UnicodeDecodeError traceback from verify."""
    directory = tmp_path / "pair"
    shutil.copytree(survive_seeds.pair, directory)
    path = directory / "dict.en.txt"
    path.write_bytes(bytes([path.read_bytes()[0] ^ 0x80]) + path.read_bytes()[1:])
    with pytest.raises(FormatError, match=r"dict\.en\.txt is not a fairseq dictionary \(not UTF-8 text, line 1\)"):
        Dictionary.load(path)
    assert any("dict.en.txt" in problem and "not UTF-8" in problem for problem in verify_directory(directory))


def test_an_empty_sentencepiece_model_is_refused_at_load(tmp_path):
    """empty spm.model: it loaded as a model of no pieces, then failed at the first encode."""
    (tmp_path / "spm.model").write_bytes(b"")
    with pytest.raises(ConfigError, match=r"spm\.model is not a SentencePiece model \(it holds no pieces\)"):
        load_tokenizer("sentencepiece", tmp_path / "spm.model")


def test_a_sentencepiece_piece_that_is_not_utf8_is_refused_at_load(survive_seeds, tmp_path):
    """flip[(4, 7)] of a small model: a piece's bytes stop being UTF-8; id_to_piece raised UnicodeDecodeError."""
    data = survive_seeds.spm.read_bytes()
    processor = sentencepiece.SentencePieceProcessor(model_proto=data)
    piece = next(p.encode() for p in map(processor.id_to_piece, range(processor.get_piece_size()))
                 if p.isascii() and len(p) > 2 and data.count(p.encode()) == 1)
    at = data.index(piece)
    (tmp_path / "spm.model").write_bytes(data[:at] + b"\xbc" + data[at + 1 :])
    with pytest.raises(ConfigError, match=r"spm\.model is not a SentencePiece model \(a piece is not UTF-8 text\)"):
        load_tokenizer("sentencepiece", tmp_path / "spm.model")


def test_a_tokenizer_json_nested_too_deep_is_a_config_error(tmp_path):
    """deep-json: json.loads raised RecursionError out of the loaders."""
    path = tmp_path / "tokenizer.json"
    path.write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(ConfigError, match=r"tokenizer\.json is not a Hugging Face tokenizer\.json \(not JSON"):
        load_tokenizer("hf", path)
    with pytest.raises(ConfigError, match=r"tokenizer\.json: not a tokenizer\.json"):
        ranks_from_byte_level_bpe(path)


def test_a_tiktoken_rank_beyond_int32_is_refused(tmp_path):
    """value='99999999999999999999999999999999' on a line: tiktoken raised OverflowError."""
    path = write_ranks(_bytes_ranks({b"ab": 10**32}), tmp_path / "big.tiktoken")
    with pytest.raises(ConfigError, match=r"big\.tiktoken is not a tiktoken ranks file \(line 257: .*int32"):
        load_tokenizer("tiktoken", path)


def test_tiktoken_token_strings_take_memory_by_ranks_not_by_the_largest_rank(tmp_path):
    """A rank far past the others made id_to_token build a list as long as the largest rank."""
    path = write_ranks(_bytes_ranks({b"ab": 50_000_000}), tmp_path / "gap.tiktoken")
    tokenizer = load_tokenizer("tiktoken", path)
    tracemalloc.start()
    assert tokenizer.id_to_token(50_000_000) == "ab"
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 10 << 20
    with pytest.raises(IndexError, match="unused"):
        tokenizer.id_to_token(1000)


def test_a_t2t_vocab_lacking_a_single_character_names_itself(tmp_path):
    """drop(line k) of vocab.subwords: encoding failed with an error naming no file."""
    path = tmp_path / "vocab.subwords"
    SubwordTextEncoder(["<pad>_", "<EOS>_", "ab_", "a", *"\\_u;0123456789"]).save(path)
    with pytest.raises(ConfigError, match=r"vocab\.subwords: the vocabulary cannot spell 'b_'"):
        load_tokenizer("t2t-subword", path).encode_batch(["ab b"])
    SubwordTextEncoder(["<pad>_", "<EOS>_", "ab_", "a", "b", *"\\u;0123456789"]).save(path)  # no "_"
    with pytest.raises(ConfigError, match=r"vocab\.subwords is not a T2T subword vocab file \(escape character '_'"):
        load_tokenizer("t2t-subword", path)


@pytest.mark.parametrize("field, value, match", [
    ("settings", [1, 2], "are not a mapping"),
    ("backend", "rentencepiece", "unknown backend 'rentencepiece'"),
    ("backend", ["sentencepiece"], "must name a backend and a file"),
    ("model", "../spm.model", "must name a backend and a file"),
])
def test_a_damaged_saved_tokenizer_manifest_names_itself(survive_seeds, tmp_path, field, value, match):
    """set['settings']=[1, 2], flip[(16, 0)] (the backend's name) and others: errors that named no file, a
    TypeError, or a model read from outside the directory."""
    directory = tmp_path / "lm"
    shutil.copytree(survive_seeds.lm, directory)
    manifest = directory / "tokenmill-tokenizer.json"
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), field: value}))
    with pytest.raises(ConfigError, match=rf"tokenmill-tokenizer\.json is not a tokenizer manifest \(.*{match}"):
        load_saved(directory)
