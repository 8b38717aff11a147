"""prepare with the tokenizers users already have: Hugging Face tokenizer.json, tiktoken ranks, and
Megatron's preprocess_data flags. The stored ids are the tokenizer's own, checked against the
library's own batch encoders and read back by megatron-core."""

from __future__ import annotations

import base64
import itertools
import json
import string
import subprocess
import sys

import numpy as np
import pytest
import tiktoken
import tokenizers

from tests.peers import REPO, run_peer
from tests.vocab.multilingual import generated_lines, sample_lines
from tokenmill.errors import ConfigError
from tokenmill.prepare import build_config, prepare
from tokenmill.store import IndexedDataset
from tokenmill.store.manifest import read_manifest, verify_directory
from tokenmill.vocab.tokenizer import train_tokenizer

LINES = sample_lines() + generated_lines(600)


def documents(count: int = 300) -> list[str]:
    """Real-looking documents: several lines each (newlines inside the JSON value), odd spacing kept."""
    rng = np.random.default_rng(3)
    docs = []
    for i in range(count):
        k = int(rng.integers(1, 4))
        start = int(rng.integers(0, len(LINES) - k))
        docs.append(("\n" if i % 3 == 0 else "  ").join(LINES[start : start + k]) + ("\n" if i % 5 == 0 else ""))
    return docs


def per_line(flat: np.ndarray, lengths: np.ndarray) -> list[list[int]]:
    return [part.tolist() for part in np.split(flat, np.cumsum(lengths)[:-1])]


@pytest.fixture(scope="module")
def hf_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("hf") / "tokenizer.json"
    train_tokenizer("hf", LINES, {"kind": "byte-level-bpe", "vocab_size": 1200}, path)
    return path


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("jsonl") / "corpus.jsonl"
    path.write_text("".join(json.dumps({"text": d, "id": i}, ensure_ascii=False) + "\n"
                            for i, d in enumerate(documents())), encoding="utf-8")
    return path


def test_megatron_flags_store_the_hf_tokenizers_own_ids_plus_eod(hf_model, corpus, tmp_path):
    prefix = tmp_path / "out" / "my-corpus"
    settings = {"input": str(corpus), "output_prefix": str(prefix), "tokenizer_type": "HuggingFaceTokenizer",
                "tokenizer_model": str(hf_model), "append_eod": True, "json_keys": "text", "workers": 2}
    summary = prepare(build_config(settings), progress=False)
    store = IndexedDataset(tmp_path / "out" / "my-corpus_text_document")
    reference = tokenizers.Tokenizer.from_file(str(hf_model))
    eod = reference.token_to_id("<|endoftext|>")
    expected = [[*e.ids, eod] for e in reference.encode_batch(documents(), add_special_tokens=False)]
    assert [store[i].tolist() for i in range(len(store))] == expected, "nothing normalized, filtered or deduplicated"
    assert store.layout.value == "megatron" and store.document_indices.tolist() == list(range(len(expected) + 1))
    assert summary.vocab["eod"] == {"symbol": "<|endoftext|>", "id": eod}
    assert sorted(p.name for p in (tmp_path / "out").iterdir() if not p.name.startswith(".")) == [
        "manifest.json", "my-corpus_text_document.bin", "my-corpus_text_document.idx", "preprocess.log",
        "tokenizer.json", "tokenmill-tokenizer.json",
    ]
    assert verify_directory(tmp_path / "out") == []


@pytest.mark.megatron
def test_megatron_core_reads_the_result_as_its_own_gpt_dataset(hf_model, corpus, tmp_path):
    prefix = tmp_path / "out" / "lm"
    settings = {"input": str(corpus), "output_prefix": str(prefix), "tokenizer": "hf",
                "tokenizer_model": str(hf_model), "append_eod": True}
    prepare(build_config(settings), progress=False)
    store = IndexedDataset(f"{prefix}_text_document")
    seen = run_peer("megatron", """
import numpy
from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig
from megatron.core.datasets.indexed_dataset import IndexedDataset
from megatron.core.datasets.utils import Split
class Tok:
    def __init__(self, eod):
        self.vocab_size, self.eod = 1200, eod
        self.unique_identifiers = {"class": "T", "eod": eod}
ds = IndexedDataset(PAYLOAD["prefix"], multimodal=False, mmap=True)
config = GPTDatasetConfig(random_seed=1, sequence_length=32, blend=([PAYLOAD["prefix"]], None), split="1,0,0",
                          path_to_cache=PAYLOAD["cache"], tokenizer=Tok(PAYLOAD["eod"]), reset_position_ids=False,
                          reset_attention_mask=False, eod_mask_loss=False, create_attention_mask=False)
gpt = GPTDataset(ds, PAYLOAD["prefix"], numpy.arange(len(ds.sequence_lengths), dtype=numpy.int32), 10,
                 Split.train, config)
tokens = [gpt[i]["tokens"].tolist() for i in range(len(gpt))]
print("RESULT:" + json.dumps({"n": len(ds), "item": ds[3].tolist(), "docs": ds.document_indices.tolist()[:5],
                              "samples": len(tokens), "width": len(tokens[0])}))
""", {"prefix": f"{prefix}_text_document", "eod": int(store[0][-1]), "cache": str(tmp_path / "mcache")})
    assert seen["n"] == len(store) and seen["item"] == store[3].tolist()
    assert seen["docs"] == [0, 1, 2, 3, 4]
    assert seen["samples"] >= 10 and seen["width"] == 32, "GPTDataset builds its samples over our store"


def test_without_append_eod_nothing_is_appended_as_in_preprocess_data(hf_model, corpus, tmp_path):
    settings = {"input": str(corpus), "output_prefix": str(tmp_path / "noeod"), "tokenizer": "hf",
                "tokenizer_model": str(hf_model)}
    prepare(build_config(settings), progress=False)
    store = IndexedDataset(tmp_path / "noeod_text_document")
    reference = tokenizers.Tokenizer.from_file(str(hf_model))
    assert store[7].tolist() == reference.encode(documents()[7], add_special_tokens=False).ids
    assert read_manifest(tmp_path).stores["noeod_text_document"]["eos"] is None
    assert verify_directory(tmp_path) == []


def test_megatron_flags_from_the_command_line_with_a_glob(hf_model, corpus, tmp_path):
    parts = tmp_path / "parts"
    parts.mkdir()
    rows = corpus.read_text(encoding="utf-8").splitlines(keepends=True)
    for k in range(3):
        (parts / f"part-{k}.jsonl").write_text("".join(rows[k * 100 : (k + 1) * 100]), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "tokenmill", "prepare", "--input", str(parts / "part-*.jsonl"), "--output-prefix",
         str(tmp_path / "cli" / "c"), "--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model", str(hf_model),
         "--append-eod", "--workers", "2", "-q"], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert len(IndexedDataset(tmp_path / "cli" / "c_text_document")) == 300, "the three parts in order"


def write_ranks(path, ranks: dict[bytes, int]) -> None:
    path.write_bytes(b"".join(base64.b64encode(token) + b" %d\n" % rank for token, rank in ranks.items()))


def test_tiktoken_ranks_give_tiktokens_own_ids_in_int32_stores(tmp_path):
    tokens = [bytes([b]) for b in range(256)] + [bytes([a, b]) for a in range(256) for b in range(256)]
    words = ("".join(w).encode() for w in itertools.product(string.ascii_lowercase, repeat=3))
    tokens += list(itertools.islice(words, 70_000 - len(tokens)))
    ranks = {token: rank for rank, token in enumerate(tokens)}
    model = tmp_path / "big.tiktoken"
    write_ranks(model, ranks)
    docs = ["the quick brown fox", "abc abd xyz 12 é", "Grüße aus Köln — 東京", "zzz aaa"] * 5
    (tmp_path / "train.en").write_text("".join(d + "\n" for d in docs), encoding="utf-8")
    settings = {"source_lang": "en", "trainpref": str(tmp_path / "train"), "destdir": str(tmp_path / "lm"),
                "tokenizer": "tiktoken", "tokenizer_model": str(model), "layout": "megatron", "dedup": False,
                "append_eod": True}
    summary = prepare(build_config(settings), progress=False)
    store = IndexedDataset(summary.destdir / "train")
    assert store.dtype == np.int32, "70,001 ids do not fit uint16"
    pattern = (r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*"
               r"|\s*[\r\n]|\s+(?!\S)|\s+")
    reference = tiktoken.Encoding("ref", pat_str=pattern, mergeable_ranks=ranks,
                                  special_tokens={"<|endoftext|>": 70_000})
    expected = [[*ids, 70_000] for ids in reference.encode_ordinary_batch(docs)]
    assert [store[i].tolist() for i in range(len(store))] == expected
    assert int(store.tokens.max()) >= 65_536, "ids above uint16 survive"
    assert verify_directory(summary.destdir) == []


def test_hf_tokenizer_trained_by_prepare_for_translation_pairs(tmp_path):
    from tests.prepare.conftest import SAMPLE

    settings = {"source_lang": "en", "target_lang": "zh", "trainpref": str(SAMPLE / "train"),
                "validpref": str(SAMPLE / "valid"), "destdir": str(tmp_path / "bin"), "tokenizer": "hf",
                "hf_model_type": "bpe", "vocab_size": 500, "min_frequency": 1}
    summary = prepare(build_config(settings), progress=False)
    out = summary.destdir
    model = tokenizers.Tokenizer.from_file(str(out / "tokenizer.json"))
    cleaned = (out / ".work" / "clean" / "valid.zh").read_text(encoding="utf-8").split("\n")[:-1]
    store = IndexedDataset(out / "valid.en-zh.zh")
    eos = model.token_to_id("</s>")
    assert store[2].tolist() == [*model.encode(cleaned[2], add_special_tokens=False).ids, eos]
    assert not list(out.glob("dict*.txt")), "the tokenizer's own ids: no fairseq dictionary"
    assert verify_directory(out) == []


def test_megatron_flag_mistakes_are_named(hf_model, corpus, tmp_path):
    base = {"input": str(corpus), "output_prefix": str(tmp_path / "x"), "tokenizer_model": str(hf_model)}
    with pytest.raises(ConfigError, match="GPT2BPETokenizer needs --vocab-file"):
        build_config({**base, "tokenizer_type": "GPT2BPETokenizer"})
    with pytest.raises(ConfigError, match="no --target-lang, --validpref"):
        build_config({**base, "tokenizer": "hf", "validpref": str(corpus)})
    with pytest.raises(ConfigError, match=r"needs --tokenizer-model FILE\.tiktoken"):
        build_config({"source_lang": "en", "trainpref": str(corpus)[:-6], "tokenizer": "tiktoken"})


def test_token_and_ratio_filters_count_the_tokenizers_pieces(tmp_path):
    """Whitespace words of raw text say nothing about Chinese (no spaces): the README's filters dropped 18%
    of real English-Chinese pairs that way. Counted in pieces after encoding, as fairseq's max positions do."""
    from tests.prepare.conftest import SAMPLE

    settings = {"source_lang": "en", "target_lang": "zh", "trainpref": str(SAMPLE / "train"),
                "validpref": str(SAMPLE / "valid"), "destdir": str(tmp_path / "bin"), "vocab_size": 300,
                "character_coverage": 1.0, "joined_dictionary": True,
                "filters": {"max_tokens": 250, "max_ratio": 9}}
    summary = prepare(build_config(settings), progress=False)
    steps = summary.splits["train"]["clean"]
    before = steps["kept"]["pairs"]
    assert steps["pieces"]["pairs"] == before and "dropped_tokens" in steps["pieces"]
    assert steps["pieces"]["kept"] >= 0.99 * before, steps
    assert summary.splits["train"]["langs"]["zh"]["sentences"] == steps["pieces"]["kept"]

    tight = {**settings, "destdir": str(tmp_path / "tight"), "filters": {"max_tokens": 22}}
    summary = prepare(build_config(tight), progress=False)
    pieces = summary.splits["train"]["clean"]["pieces"]
    store = IndexedDataset(summary.destdir / "train.en-zh.en")
    assert pieces["dropped_tokens"] > 0 and len(store) == pieces["kept"]
    assert 0 < len(store) and int(store.sizes.max()) <= 22 + 1, "at most 22 pieces (+ </s>) survive"
    assert "train pieces:" in summary.table() and verify_directory(summary.destdir) == []


def awkward_jsonl(path, docs: list[str]) -> None:
    """Documents as JSONL with what a reader must handle: a BOM, CRLF ends, an empty document, a row that
    is not JSON, a row without the key and a row with invalid UTF-8 (the last three skipped or replaced)."""
    rows = [json.dumps({"text": d}, ensure_ascii=False).encode() for d in docs]
    rows[4] = b'{"text": ""}'
    rows[9] = b'{"text": "half a row'
    rows[12] = b'{"other": "no text key"}'
    rows[15] = b'{"text": "bad \xff byte"}'
    path.write_bytes(b"\xef\xbb\xbf" + b"\r\n".join(rows[:30]) + b"\r\n" + b"\n".join(rows[30:]) + b"\n")


@pytest.mark.parametrize("model", ["given", "trained"])
def test_megatron_runs_read_the_input_directly_with_the_same_stores_and_counts(hf_model, tmp_path, monkeypatch, model):
    """Nothing is cleaned with Megatron's flags, so the encode stage reads the input itself (no cleaned copy):
    the stores, the manifest's counts and a trained tokenizer equal those of the run through a cleaned copy,
    with small chunks and tokenizer calls (many calls in flight on two threads)."""
    from tokenmill.prepare import pipeline

    awkward_jsonl(tmp_path / "in.jsonl", documents(240))
    monkeypatch.setattr(pipeline, "_ENCODE_BATCH_CHARS", 700)
    made = {}
    for direct in (True, False):
        monkeypatch.setattr(pipeline.Pipeline, "direct_input", direct)
        out = tmp_path / f"direct-{direct}"
        settings = {"input": str(tmp_path / "in.jsonl"), "output_prefix": str(out / "lm"), "tokenizer": "hf",
                    "append_eod": True, "workers": 2, "chunk_lines": 37, "on_malformed": "skip",
                    "on_invalid_utf8": "replace",
                    **({"tokenizer_model": str(hf_model)} if model == "given" else
                       {"vocab_size": 600, "input_sentence_size": 100})}
        summary = prepare(build_config(settings), progress=False)
        assert (out / ".work" / "clean" / "train.text").exists() is not direct
        made[direct] = (summary.to_dict(), {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()
                                             and p.suffix in (".bin", ".idx", ".json") and p.name != "manifest.json"})
        assert verify_directory(out) == []
    assert made[True] == made[False]
    counts = made[True][0]["splits"]["train"]["clean"]
    assert counts["read"]["malformed_skipped"] == 2 and counts["read"]["invalid_utf8_replaced"] == 1
    assert counts["kept"] == {"pairs": 238}
    store = IndexedDataset(tmp_path / "direct-True" / "lm_text_document")
    assert len(store) == 238 and store[4].tolist() == [store[4][-1]], "the empty document is kept: EOD alone"
    if model == "given":  # in input order, whatever the chunks and tokenizer calls
        read = documents(240)
        read[4], read[15] = "", "bad \ufffd byte"
        read = [d for i, d in enumerate(read) if i not in (9, 12)]
        reference = tokenizers.Tokenizer.from_file(str(hf_model))
        eod = reference.token_to_id("<|endoftext|>")
        expected = [[*e.ids, eod] for e in reference.encode_batch(read, add_special_tokens=False)]
        assert [store[i].tolist() for i in range(len(store))] == expected


def test_runs_that_clean_still_go_through_a_cleaned_copy(hf_model, corpus, tmp_path):
    settings = {"input": str(corpus), "output_prefix": str(tmp_path / "o" / "lm"), "tokenizer": "hf",
                "tokenizer_model": str(hf_model), "dedup": True}
    prepare(build_config(settings), progress=False)
    assert (tmp_path / "o" / ".work" / "clean" / "train.text").exists()
