"""The fast encoder (gigatoken) against each reference library, the check's sample, and the choice of
encoder: the fast encoder gives the reference's ids on held-out multilingual text for every model kind it
claims, refuses the others with a reason, and a wrong fast encoder is caught by the check."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from tests.vocab import wrong_fast
from tests.vocab.fast_corpus import SPECIAL_TEXT, held_out_documents, train_models
from tests.vocab.multilingual import sample_lines
from tokenmill.errors import ConfigError
from tokenmill.vocab import encoder_check
from tokenmill.vocab.encoder_check import LONGEST, SPECIAL_DOCS, CheckSample, check_sample
from tokenmill.vocab.encoder_choice import choose_encoder, run_checked
from tokenmill.vocab.fast_encoder import FAST_BUILDERS, FastEncoder, Unsupported, fast_encoder, register_fast_encoder
from tokenmill.vocab.sentencepiece import SentencePieceOptions
from tokenmill.vocab.tokenizer import load_tokenizer, train_tokenizer

pytest.importorskip("gigatoken")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return train_models(tmp_path_factory.mktemp("fast-models"))


@pytest.fixture(scope="module")
def documents():
    return held_out_documents(6000, long_chars=300_000)


def per_document(flat: np.ndarray, lengths: np.ndarray) -> list[list[int]]:
    return [part.tolist() for part in np.split(flat, np.cumsum(lengths)[:-1])] if len(lengths) else []


@pytest.mark.parametrize("kind", ["hf-byte-level-bpe", "tiktoken-cl100k", "tiktoken-r50k", "tiktoken-o200k",
                                  "sentencepiece-bpe-byte-fallback"])
def test_the_fast_encoder_gives_the_reference_ids_on_held_out_text(models, documents, kind):
    reference = models[kind]
    fast = fast_encoder(reference)
    assert isinstance(fast, FastEncoder) and fast.library.startswith("gigatoken")
    expected = per_document(*reference.encode_batch(documents, num_threads=1))
    for threads in (1, 2):
        flat, lengths = fast.encode_batch(documents, num_threads=threads)
        assert flat.dtype == np.int32 and lengths.dtype == np.int64 and len(lengths) == len(documents)
        got = per_document(flat, lengths)
        differing = [i for i, (a, b) in enumerate(zip(expected, got, strict=True)) if a != b]
        assert differing == [], f"{kind}: {len(differing)} documents differ, first {documents[differing[0]][:80]!r}"
    assert sum(map(len, expected)) > 100_000
    # everything but encoding is the reference's own
    assert fast.vocab_size == reference.vocab_size and fast.special_ids == reference.special_ids
    assert fast.fingerprint() == reference.fingerprint() and fast.name == reference.name


DECLARED = ("stores_own_ids", "needs_model", "samples_by_bytes", "may_stop_short", "has_unknown_surfaces")
"""The backends' declared abilities that prepare asks (see TokenizerBase)."""


@pytest.mark.parametrize("kind", ["hf-byte-level-bpe", "tiktoken-cl100k", "sentencepiece-bpe-byte-fallback"])
def test_the_fast_encoder_declares_its_references_abilities(models, kind):
    reference = models[kind]
    fast = fast_encoder(reference)
    assert {name: getattr(fast, name) for name in DECLARED} == {name: getattr(reference, name) for name in DECLARED}
    if kind.startswith("sentencepiece"):  # fairseq's ids with unknown surfaces: not the class defaults
        assert not fast.stores_own_ids and fast.has_unknown_surfaces and fast.may_stop_short
    assert fast.overlaps_batches and fast.batch_per_thread  # its own: one batch per thread, several at once


def test_special_token_text_is_encoded_as_the_reference_encodes_it(models):
    hf, tik = models["hf-byte-level-bpe"], models["tiktoken-cl100k"]
    text = ["x <|endoftext|> y"]
    eot = hf.token_to_id("<|endoftext|>")
    assert eot in fast_encoder(hf).encode_batch(text)[0].tolist()  # tokenizers splits added tokens out
    assert tik.special_ids["eod"] not in fast_encoder(tik).encode_batch(text)[0].tolist()  # encode_ordinary
    assert fast_encoder(tik).encode_batch(text)[0].tolist() == tik.encode_batch(text)[0].tolist()


def test_control_piece_text_is_plain_text_as_sentencepiece_encodes_it(models):
    """gigatoken reads a .model as Hugging Face's converters do (the text ``</s>`` is the control piece);
    SentencePiece encodes it as plain text, and so does the fast encoder built here."""
    spm = models["sentencepiece-bpe-byte-fallback"]
    lines = ["a </s> b <s> c", "</s>", "<unk> <pad>"]
    got = per_document(*fast_encoder(spm).encode_batch(lines))
    assert got == per_document(*spm.encode_batch(lines)) and spm.special_ids["eos"] not in got[1]


def test_text_the_fast_library_refuses_is_encoded_by_the_reference(models):
    """A lone surrogate (JSON's "\\ud800"): tiktoken replaces it, gigatoken refuses the batch, so the batch goes
    to the reference and the ids stay tiktoken's."""
    tik = models["tiktoken-cl100k"]
    lines = ["plain", "bad \ud800 surrogate", ""]
    flat, lengths = fast_encoder(tik).encode_batch(lines)
    assert per_document(flat, lengths) == per_document(*tik.encode_batch(lines))


LLAMA2 = {"vocab_size": 700, "model_type": "bpe", "byte_fallback": True, "hard_vocab_limit": False,
          "normalization_rule_name": "identity", "extra_options": {"remove_extra_whitespaces": False}}


@pytest.fixture(scope="module")
def unsupported(tmp_path_factory):
    folder = tmp_path_factory.mktemp("unsupported")
    lines = sample_lines()
    made = {kind: train_tokenizer("hf", lines, {"kind": kind, "vocab_size": 500}, folder / f"{kind}.json")
            for kind in ("bpe", "unigram", "wordpiece")}
    for name, options in {"spm-unigram": SentencePieceOptions(vocab_size=500, hard_vocab_limit=False),
                          "spm-bpe-no-byte-fallback": SentencePieceOptions(vocab_size=500, model_type="bpe",
                                                                           hard_vocab_limit=False),
                          "spm-bpe-user-defined": SentencePieceOptions(**LLAMA2, user_defined_symbols=["<|x|>"]),
                          "spm-bpe-nfkc": SentencePieceOptions(**{**LLAMA2, "normalization_rule_name": "nmt_nfkc"}),
                          "spm-bpe-strips-whitespace": SentencePieceOptions(**{**LLAMA2, "extra_options": {}}),
                          }.items():
        made[name] = train_tokenizer("sentencepiece", lines, options, folder / f"{name}.model")
    made["t2t"] = train_tokenizer("t2t-subword", lines, {"target_size": 300}, folder / "t2t.subwords")
    return made


@pytest.mark.parametrize("name", ["bpe", "unigram", "wordpiece", "spm-unigram", "spm-bpe-no-byte-fallback",
                                  "spm-bpe-user-defined", "spm-bpe-nfkc", "spm-bpe-strips-whitespace", "t2t",
                                  "tiktoken-custom-pattern"])
def test_models_it_does_not_support_keep_their_library(unsupported, models, name):
    if name == "tiktoken-custom-pattern":
        reference = load_tokenizer("tiktoken", models["tiktoken-cl100k"].path, {"pattern": r"\S+|\s+"})
    else:
        reference = unsupported[name]
    with pytest.raises(Unsupported) as why:
        fast_encoder(reference)
    assert str(why.value) and "\n" not in str(why.value)
    choice = choose_encoder(reference, "auto", check_docs=10, seed=1)
    assert choice.fast is None and choice.encoder is reference and choice.record()["why"] == str(why.value)
    with pytest.raises(ConfigError, match=r"--encoder fast: .*use --encoder auto or reference"):
        choose_encoder(reference, "fast", check_docs=10, seed=1)


def test_without_the_library_auto_uses_the_reference_and_fast_says_what_to_install(models, monkeypatch):
    monkeypatch.setitem(sys.modules, "gigatoken", None)  # import gigatoken -> ModuleNotFoundError
    monkeypatch.delitem(sys.modules, "tokenmill.vocab.fast_gigatoken", raising=False)
    hf = models["hf-byte-level-bpe"]
    choice = choose_encoder(hf, "auto", check_docs=10, seed=1)
    assert choice.encoder is hf and "pip install 'tokenmill[fast]'" in choice.record()["why"]
    with pytest.raises(ConfigError, match=r"gigatoken is not installed \(pip install 'tokenmill\[fast\]'\)"):
        choose_encoder(hf, "fast", check_docs=10, seed=1)
    assert choose_encoder(hf, "reference", check_docs=10, seed=1).record() == {"mode": "reference",
                                                                                 "encoder": "reference"}


# ---------------------------------------------------------------- the sample


def sampled(documents: list[str], chunk: int, docs: int = 200, seed: int = 5) -> list[tuple[int, str]]:
    sample = CheckSample(docs, seed, SPECIAL_TEXT)
    chunks = [documents[i : i + chunk] for i in range(0, len(documents), chunk)]
    assert [c for c in sample.tap(chunks)] == chunks  # passed through unchanged
    return sample.documents()


def test_the_sample_is_a_function_of_the_documents_and_the_seed_not_of_the_chunking(documents):
    a, b, c = sampled(documents, 7), sampled(documents, 1000), sampled(documents, len(documents))
    assert a == b == c
    assert sampled(documents, 1000, seed=6) != a
    positions = [p for p, _ in a]
    assert positions == sorted(set(positions)) and all(documents[p] == t for p, t in a)
    longest = max(range(len(documents)), key=lambda i: len(documents[i]))
    assert longest in positions and len(documents[longest]) >= 300_000
    with_special = [i for i, t in enumerate(documents) if any(s in t for s in SPECIAL_TEXT)]
    assert len(with_special) > 50 and set(with_special[:SPECIAL_DOCS]) <= set(positions)
    assert sum(not t.isascii() for _, t in a) >= 200 // 4
    assert 200 + 50 <= len(a) <= 200 + 50 + LONGEST + SPECIAL_DOCS


@pytest.mark.parametrize("few", [0, 100])
def test_the_special_text_documents_are_the_same_whichever_search_finds_them(documents, monkeypatch, few):
    monkeypatch.setattr(encoder_check, "FEW_SPECIALS", few)  # 0: one regex; 100: `in` for each text
    sample = CheckSample(200, 5, SPECIAL_TEXT)
    list(sample.tap([documents[i : i + 37] for i in range(0, len(documents), 37)]))
    holders = [i for i, t in enumerate(documents) if any(s in t for s in SPECIAL_TEXT)][:SPECIAL_DOCS]
    assert len(holders) > 50 and [p for p, _ in sample.special] == holders
    assert all(documents[p] == t for p, t in sample.special)


def test_the_sample_keeps_to_its_budget_and_a_long_document_does_not_crowd_out_the_rest(documents, monkeypatch):
    monkeypatch.setattr(encoder_check, "BUDGET_CHARS", 20_000)
    sample = CheckSample(1000, 5, SPECIAL_TEXT)
    list(sample.tap([documents[i : i + 500] for i in range(0, len(documents), 500)]))
    chosen = dict(sample.documents())
    longest = max(range(len(documents)), key=lambda i: len(documents[i]))
    assert longest in chosen and len(documents[longest]) > 20_000  # the longest one, over the budget by itself
    long_ones = {p for _, p, _ in sample.longest}
    special = [p for p, _ in sample.special if p not in long_ones]
    random = sorted(set(chosen) - long_ones - set(special))
    assert len(random) > 100 and sum(len(chosen[p]) for p in random) <= 20_000  # random ones within the budget
    assert 5 < sum(p in chosen for p in special) and sum(len(chosen[p]) for p in special if p in chosen) <= 5_000
    assert len(chosen) < 1000 and sample.documents() == sorted(chosen.items())


def test_the_random_part_is_spread_over_the_whole_input(documents):
    positions = np.array([p for p, _ in sampled(documents, 500, docs=400)])
    counts = np.histogram(positions, bins=4, range=(0, len(documents)))[0]
    assert counts.min() > 60, counts  # ~100 + the extras per quarter, never a clump at the start


# ---------------------------------------------------------------- the check


def test_the_check_passes_the_real_encoder_and_catches_a_wrong_one(models, documents, monkeypatch):
    hf = models["hf-byte-level-bpe"]
    sample = CheckSample(300, 1, fast_encoder(hf).special_texts)
    list(sample.tap([documents]))
    assert check_sample(hf, fast_encoder(hf), sample.documents()).matched
    monkeypatch.setitem(FAST_BUILDERS, "hf", wrong_fast.TARGET)
    wrong = fast_encoder(hf)
    result = check_sample(hf, wrong, sample.documents())
    holding = sum("<|endoftext|>" in text for _, text in sample.documents())  # the documents it gets wrong
    assert not result.matched and result.mismatches == holding > 10
    first = result.first_mismatch
    assert "<|endoftext|>" in documents[first]
    assert all("<|endoftext|>" not in documents[p] for p, _ in sample.documents() if p < first)


def test_auto_falls_back_to_the_reference_with_one_warning_and_fast_fails(models, documents, monkeypatch):
    hf = models["hf-byte-level-bpe"]
    monkeypatch.setitem(FAST_BUILDERS, "hf", FAST_BUILDERS["hf"])  # the real one is back after the test
    register_fast_encoder("hf", wrong_fast.TARGET)
    warnings, ran = [], []

    def encode_stage(choice):
        ran.append(choice.encoder)
        return choice.encoder.encode_batch(next(iter(choice.tap([documents]))))

    choice = choose_encoder(hf, "auto", check_docs=100, seed=1)
    (flat, lengths), record = run_checked(choice, encode_stage, warnings.append, 1)
    assert [type(e) for e in ran] == [FastEncoder, type(hf)] and len(warnings) == 1 and "\n" not in warnings[0]
    assert "wrong-gigatoken gave other ids than hf" in warnings[0] and warnings[0].endswith("encoded with hf instead")
    assert record["encoder"] == "reference" and record["check"]["matched"] is False
    assert "gave other ids" in record["why"]
    assert per_document(flat, lengths) == per_document(*hf.encode_batch(documents))
    with pytest.raises(ConfigError, match="--encoder fast: wrong-gigatoken gave other ids than hf on"):
        run_checked(choose_encoder(hf, "fast", check_docs=100, seed=1), encode_stage, warnings.append, 1)


def test_whitespace_words_have_no_fast_encoder():
    assert choose_encoder(None, "auto", check_docs=10, seed=1).record() == {"mode": "auto", "encoder": "reference"}
    with pytest.raises(ConfigError, match=r"--encoder fast: whitespace words \(--tokenizer none\)"):
        choose_encoder(None, "fast", check_docs=10, seed=1)
