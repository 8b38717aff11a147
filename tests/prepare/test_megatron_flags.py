"""prepare with Megatron preprocess_data's flags (``--input``, ``--output-prefix``, ``--json-keys``,
``--tokenizer-type``, ``--tokenizer-model``, ``--vocab-file/--merge-file``, ``--append-eod``, ``--workers``)
on a JSONL corpus. Every tokenizer type stores its library's own ids of the JSON values, plus the
end-of-document id Megatron's tokenizer of that type appends, in the Megatron layout; megatron-core
reads the result as its own GPTDataset."""

from __future__ import annotations

import io
import itertools
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import regex
import sentencepiece
import tiktoken
import tokenizers

from tests.peers import REPO, run_peer
from tests.vocab.multilingual import generated_lines, sample_lines
from tokenmill.data import GPTDataset, GPTDatasetConfig
from tokenmill.errors import ConfigError
from tokenmill.prepare import build_config, prepare
from tokenmill.store import IndexedDataset
from tokenmill.store.manifest import read_manifest, verify_directory
from tokenmill.vocab.tiktoken_ranks import write_ranks
from tokenmill.vocab.tokenizer import train_tokenizer

LINES = sample_lines() + generated_lines(600)
ENDOFTEXT = "<|endoftext|>"
# tiktoken's published cl100k split pattern: what a ranks file without a preset name is split with
CL100K_SPLIT = (r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*"
                r"|\s*[\r\n]|\s+(?!\S)|\s+")


def documents(count: int = 300) -> list[str]:
    """Real-looking documents: several lines each (newlines inside the JSON value), odd spacing kept."""
    rng = np.random.default_rng(3)
    docs = []
    for i in range(count):
        k = int(rng.integers(1, 4))
        start = int(rng.integers(0, len(LINES) - k))
        docs.append(("\n" if i % 3 == 0 else "  ").join(LINES[start : start + k]) + ("\n" if i % 5 == 0 else ""))
    return docs


def stored(prefix: Path) -> tuple[IndexedDataset, list[list[int]]]:
    """The store at ``prefix`` and every item in it as a list of ids."""
    store = IndexedDataset(prefix)
    return store, [store[i].tolist() for i in range(len(store))]


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


def megatron_run(corpus: Path, prefix: Path, tokenizer_type: str, **flags: object) -> dict:
    """The settings of ``preprocess_data.py --input corpus --output-prefix prefix --json-keys text
    --tokenizer-type T --append-eod --workers 2`` plus ``flags``."""
    return {"input": str(corpus), "output_prefix": str(prefix), "json_keys": "text", "tokenizer_type": tokenizer_type,
            "append_eod": True, "workers": 2, **{k: str(v) for k, v in flags.items()}}


# ---------------------------------------------------------------- HuggingFaceTokenizer


def test_megatron_flags_store_the_hf_tokenizers_own_ids_plus_eod(hf_model, corpus, tmp_path):
    prefix = tmp_path / "out" / "my-corpus"
    settings = {"input": str(corpus), "output_prefix": str(prefix), "tokenizer_type": "HuggingFaceTokenizer",
                "tokenizer_model": str(hf_model), "append_eod": True, "json_keys": "text", "workers": 2}
    summary = prepare(build_config(settings), progress=False)
    store = IndexedDataset(tmp_path / "out" / "my-corpus_text_document")
    reference = tokenizers.Tokenizer.from_file(str(hf_model))
    eod = reference.token_to_id(ENDOFTEXT)
    expected = [[*e.ids, eod] for e in reference.encode_batch(documents(), add_special_tokens=False)]
    assert [store[i].tolist() for i in range(len(store))] == expected, "nothing normalized, filtered or deduplicated"
    assert store.layout.value == "megatron" and store.document_indices.tolist() == list(range(len(expected) + 1))
    assert summary.vocab["eod"] == {"symbol": ENDOFTEXT, "id": eod}
    assert sorted(p.name for p in (tmp_path / "out").iterdir() if not p.name.startswith(".")) == [
        "manifest.json", "my-corpus_text_document.bin", "my-corpus_text_document.idx",
        "my-corpus_text_document.prov", "preprocess.log",
        "tokenizer.json", "tokenmill-tokenizer.json",
    ]
    assert verify_directory(tmp_path / "out") == []


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


# ---------------------------------------------------------------- GPT2BPETokenizer (vocab.json + merges.txt)


def gpt2_byte_chars() -> list[str]:
    """GPT-2's printable stand-in for each byte: printable Latin-1 bytes stand for themselves, the other
    68 take the code points from 256 on, in byte order."""
    own = {*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)}
    chars, spare = [], 256
    for byte in range(256):
        if byte in own:
            chars.append(chr(byte))
        else:
            chars.append(chr(spare))
            spare += 1
    return chars


class GPT2Encoder:
    """GPT-2's byte-level BPE as its original encoder (and Megatron's GPT2BPETokenizer) applies it, in a few
    lines of plain Python: split with GPT-2's pattern, spell each chunk's UTF-8 bytes in the byte alphabet,
    then merge the adjacent pair of lowest merge rank (all its occurrences, left to right) until no pair
    has a rank; each piece's id from vocab.json. An oracle that shares no code with ``tokenizers``."""

    SPLIT = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")

    def __init__(self, vocab_file: Path, merge_file: Path) -> None:
        self.vocab: dict[str, int] = json.loads(vocab_file.read_text(encoding="utf-8"))
        rows = merge_file.read_text(encoding="utf-8").split("\n")
        assert rows[0].startswith("#version"), "Megatron skips the first line of merges.txt unread"
        self.ranks = {tuple(row.split(" ")): rank for rank, row in enumerate(r for r in rows[1:] if r)}
        self.chars = gpt2_byte_chars()
        self.cache: dict[str, list[int]] = {}

    def _pieces(self, word: str) -> list[str]:
        parts = list(word)
        while len(parts) > 1:
            rank, pair = min((self.ranks.get(p, len(self.ranks)), p) for p in itertools.pairwise(parts))
            if rank == len(self.ranks):
                break
            merged, i = [], 0
            while i < len(parts):
                if i + 1 < len(parts) and (parts[i], parts[i + 1]) == pair:
                    merged.append(parts[i] + parts[i + 1])
                    i += 2
                else:
                    merged.append(parts[i])
                    i += 1
            parts = merged
        return parts

    def encode(self, text: str) -> list[int]:
        ids = []
        for chunk in self.SPLIT.findall(text):
            if chunk not in self.cache:
                word = "".join(self.chars[b] for b in chunk.encode("utf-8"))
                self.cache[chunk] = [self.vocab[piece] for piece in self._pieces(word)]
            ids += self.cache[chunk]
        return ids


@pytest.fixture(scope="module")
def gpt2_files(hf_model, tmp_path_factory):
    """GPT-2's vocab.json and merges.txt of the trained byte-level BPE, as ``tokenizers`` writes them."""
    folder = tmp_path_factory.mktemp("gpt2")
    written = tokenizers.Tokenizer.from_file(str(hf_model)).model.save(str(folder))
    assert sorted(Path(p).name for p in written) == ["merges.txt", "vocab.json"]
    return folder / "vocab.json", folder / "merges.txt"


def test_gpt2_bpe_vocab_and_merges_store_gpt2s_own_ids_plus_eod(gpt2_files, corpus, tmp_path):
    vocab_file, merge_file = gpt2_files
    prefix = tmp_path / "gpt" / "my-gpt2"
    summary = prepare(build_config(megatron_run(corpus, prefix, "GPT2BPETokenizer", vocab_file=vocab_file,
                                                merge_file=merge_file)), progress=False)
    store, items = stored(tmp_path / "gpt" / "my-gpt2_text_document")
    vocab = json.loads(vocab_file.read_text(encoding="utf-8"))
    eod = vocab[ENDOFTEXT]  # Megatron's GPT2BPETokenizer: eod = encoder['<|endoftext|>']
    reference = tokenizers.ByteLevelBPETokenizer(str(vocab_file), str(merge_file), add_prefix_space=False)
    expected = [[*e.ids, eod] for e in reference.encode_batch(documents())]
    assert items == expected, "tokenizers' own GPT-2 byte-level BPE of the two files"
    by_hand = GPT2Encoder(vocab_file, merge_file)
    assert items == [[*by_hand.encode(d), eod] for d in documents()], "GPT-2's merge loop, restated"
    assert sum(len(i) for i in items) > 3 * len(items) and max(max(i) for i in items) > 600, "merged pieces are used"
    assert store.dtype == np.uint16 and store.document_indices.tolist() == list(range(len(items) + 1))
    assert summary.vocab["eod"] == {"symbol": ENDOFTEXT, "id": eod}
    assert read_manifest(tmp_path / "gpt").stores["my-gpt2_text_document"]["eos"] == eod
    assert verify_directory(tmp_path / "gpt") == []


def test_gpt2_files_that_are_not_vocab_and_merges_are_one_error(gpt2_files, corpus, tmp_path):
    vocab_file, merge_file = gpt2_files
    swapped = megatron_run(corpus, tmp_path / "x", "GPT2BPETokenizer", vocab_file=merge_file, merge_file=vocab_file)
    with pytest.raises(ConfigError, match=r"not GPT-2 vocab\.json and merges\.txt"):
        prepare(build_config(swapped), progress=False)


# ---------------------------------------------------------------- TikTokenizer and SentencePieceTokenizer


@pytest.fixture(scope="module")
def ranks_file(hf_model, tmp_path_factory):
    """A ``.tiktoken`` ranks file of the trained byte-level BPE: the 256 bytes, then each merge's result in
    merge order (the rank order tiktoken merges by)."""
    spec = json.loads(hf_model.read_text(encoding="utf-8"))
    byte_of = {c: b for b, c in enumerate(gpt2_byte_chars())}
    ranks = {bytes([b]): b for b in range(256)}
    for merge in spec["model"]["merges"]:
        left, right = merge.split(" ") if isinstance(merge, str) else merge
        ranks.setdefault(bytes(byte_of[c] for c in left + right), len(ranks))
    assert len(ranks) > 1000, "most of the 1200 entries are merges"
    path = tmp_path_factory.mktemp("tiktoken") / "trained.tiktoken"
    write_ranks(ranks, path)
    return path, ranks


def test_tiktokenizer_stores_tiktokens_own_ids_plus_eod(ranks_file, corpus, tmp_path):
    model, ranks = ranks_file
    prefix = tmp_path / "tik" / "lm"
    summary = prepare(build_config(megatron_run(corpus, prefix, "TikTokenizer", tokenizer_model=model)),
                      progress=False)
    store, items = stored(tmp_path / "tik" / "lm_text_document")
    eod = len(ranks)  # a ranks file without a preset: <|endoftext|> is the id after the last rank
    reference = tiktoken.Encoding("ref", pat_str=CL100K_SPLIT, mergeable_ranks=ranks, special_tokens={ENDOFTEXT: eod})
    expected = [[*ids, eod] for ids in reference.encode_ordinary_batch(documents())]
    assert items == expected
    assert max(max(i) for i in items) > 600 and store.dtype == np.uint16
    assert summary.vocab["eod"] == {"symbol": ENDOFTEXT, "id": eod}
    assert verify_directory(tmp_path / "tik") == []


@pytest.fixture(scope="module")
def spm_model(tmp_path_factory):
    """A unigram model trained by SentencePiece itself on the multilingual lines (rare characters unknown)."""
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter([line for line in LINES if line.strip()]), model_writer=model, vocab_size=1500,
        hard_vocab_limit=False, character_coverage=0.9995, num_threads=1, minloglevel=2,
    )
    path = tmp_path_factory.mktemp("spm") / "lm.model"
    path.write_bytes(model.getvalue())
    return path


def test_sentencepiece_tokenizer_stores_sentencepieces_own_ids_plus_eos_as_eod(spm_model, corpus, tmp_path):
    prefix = tmp_path / "spm" / "lm"
    summary = prepare(build_config(megatron_run(corpus, prefix, "SentencePieceTokenizer", tokenizer_model=spm_model)),
                      progress=False)
    store, items = stored(tmp_path / "spm" / "lm_text_document")
    reference = sentencepiece.SentencePieceProcessor(model_file=str(spm_model))
    # megatron-core's SentencePieceTokenizer: tokenize = encode_as_ids(text), eod = eos_id() (</s>)
    eod = reference.eos_id()
    assert eod >= 0 and reference.id_to_piece(eod) == "</s>"
    expected = [[*ids, eod] for ids in reference.encode(documents())]
    assert items == expected
    assert any(reference.unk_id() in i for i in items), "rare characters meet <unk>, as SentencePiece maps them"
    assert store.dtype == np.uint16 and store.document_indices.tolist() == list(range(len(items) + 1))
    assert summary.vocab["eod"] == {"symbol": "</s>", "id": eod}
    assert read_manifest(tmp_path / "spm").stores["lm_text_document"]["eos"] == eod
    assert verify_directory(tmp_path / "spm") == []


# ---------------------------------------------------------------- megatron-core reads the result


@pytest.mark.megatron
def test_megatron_core_reads_the_result_as_its_own_gpt_dataset(hf_model, corpus, tmp_path):
    """megatron-core's GPTDataset over our store gives the samples tokenmill's GPTDataset gives (same seed,
    length and sample count), and each is the window of the documents its sample index points at."""
    prefix = tmp_path / "out" / "lm"
    settings = {"input": str(corpus), "output_prefix": str(prefix), "tokenizer": "hf",
                "tokenizer_model": str(hf_model), "append_eod": True}
    prepare(build_config(settings), progress=False)
    store = IndexedDataset(f"{prefix}_text_document")
    vocab_size = tokenizers.Tokenizer.from_file(str(hf_model)).get_vocab_size(with_added_tokens=True)
    eod = int(store[0][-1])
    seq_length, seed, num_samples = 32, 1, 10
    seen = run_peer("megatron", """
import numpy
from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig
from megatron.core.datasets.indexed_dataset import IndexedDataset
from megatron.core.datasets.utils import Split
class Tok:
    def __init__(self, vocab_size, eod):
        self.vocab_size, self.eod = vocab_size, eod
        self.unique_identifiers = {"class": "T", "vocab_size": vocab_size, "eod": eod}
ds = IndexedDataset(PAYLOAD["prefix"], multimodal=False, mmap=True)
config = GPTDatasetConfig(random_seed=PAYLOAD["seed"], sequence_length=PAYLOAD["seq_length"],
                          blend=([PAYLOAD["prefix"]], None), split="1,0,0", path_to_cache=PAYLOAD["cache"],
                          tokenizer=Tok(PAYLOAD["vocab_size"], PAYLOAD["eod"]), reset_position_ids=False,
                          reset_attention_mask=False, eod_mask_loss=False, create_attention_mask=False)
gpt = GPTDataset(ds, PAYLOAD["prefix"], numpy.arange(len(ds.sequence_lengths), dtype=numpy.int32),
                 PAYLOAD["num_samples"], Split.train, config)
samples = [gpt[i] for i in range(len(gpt))]
print("RESULT:" + json.dumps({
    "n": len(ds), "item": ds[3].tolist(), "docs": ds.document_indices.tolist(),
    "tokens": [s["tokens"].tolist() for s in samples], "labels": [s["labels"].tolist() for s in samples],
    "document_index": numpy.asarray(gpt.document_index).tolist(),
    "sample_index": numpy.asarray(gpt.sample_index).tolist(),
    "shuffle_index": numpy.asarray(gpt.shuffle_index).tolist(),
}))
""", {"prefix": f"{prefix}_text_document", "eod": eod, "vocab_size": vocab_size, "cache": str(tmp_path / "mcache"),
      "seed": seed, "seq_length": seq_length, "num_samples": num_samples})
    assert seen["n"] == len(store) and seen["item"] == store[3].tolist()
    assert seen["docs"] == store.document_indices.tolist()
    tokens, labels = np.array(seen["tokens"]), np.array(seen["labels"])
    assert tokens.shape == labels.shape and tokens.shape[0] >= num_samples and tokens.shape[1] == seq_length

    ours = GPTDataset(store, GPTDatasetConfig(seq_length=seq_length, seed=seed, num_samples=num_samples, eod_id=eod),
                      cache=False)
    batch = ours.get_batch(np.arange(len(ours)))
    np.testing.assert_array_equal(batch["tokens"], tokens)
    np.testing.assert_array_equal(batch["labels"], labels)

    # Megatron's own index arrays say where each sample lies in the documents, in document_index order.
    order = np.array(seen["document_index"])
    stream = np.concatenate([store[int(d)] for d in order]).astype(np.int64)
    starts = np.concatenate(([0], np.cumsum(store.sizes[order].astype(np.int64))))
    bounds = np.array(seen["sample_index"], dtype=np.int64)
    where = starts[bounds[:, 0]] + bounds[:, 1]
    rows = np.array(seen["shuffle_index"], dtype=np.int64)
    for sample, row in enumerate(rows.tolist()):
        window = stream[where[row] : where[row + 1] + 1]  # seq_length + 1 tokens: inputs and the last label
        assert window.tolist() == [*tokens[sample].tolist(), int(labels[sample, -1])], f"sample {sample}"
        assert labels[sample, :-1].tolist() == tokens[sample, 1:].tolist()
    assert len(set(rows.tolist())) == len(rows) and stream.max() < vocab_size


# ---------------------------------------------------------------- reading and mistakes


def test_megatron_flag_mistakes_are_named(hf_model, corpus, tmp_path):
    base = {"input": str(corpus), "output_prefix": str(tmp_path / "x"), "tokenizer_model": str(hf_model)}
    with pytest.raises(ConfigError, match="GPT2BPETokenizer needs --vocab-file"):
        build_config({**base, "tokenizer_type": "GPT2BPETokenizer"})
    with pytest.raises(ConfigError, match="no --target-lang, --validpref"):
        build_config({**base, "tokenizer": "hf", "validpref": str(corpus)})
    with pytest.raises(ConfigError, match=r"needs --tokenizer-model FILE\.tiktoken"):
        build_config({"source_lang": "en", "trainpref": str(corpus)[:-6], "tokenizer": "tiktoken"})


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
    from tokenmill.prepare.run.context import RunContext
    from tokenmill.prepare.stages import encode

    awkward_jsonl(tmp_path / "in.jsonl", documents(240))
    monkeypatch.setattr(encode, "ENCODE_BATCH_CHARS", 700)
    made = {}
    for direct in (True, False):
        monkeypatch.setattr(RunContext, "direct_input", direct)
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
    # the empty document (row 4) is a document without a sequence, as preprocess_data writes it
    assert len(store) == 237 and store.document_indices.tolist()[3:7] == [3, 4, 4, 5]
    if model == "given":  # in input order, whatever the chunks and tokenizer calls
        read = documents(240)
        read[4], read[15] = "", "bad \ufffd byte"
        read = [d for i, d in enumerate(read) if i not in (9, 12)]
        reference = tokenizers.Tokenizer.from_file(str(hf_model))
        eod = reference.token_to_id(ENDOFTEXT)
        expected = [[*e.ids, eod] for e in reference.encode_batch(read, add_special_tokens=False) if e.ids]
        assert [store[i].tolist() for i in range(len(store))] == expected


def test_runs_that_clean_still_go_through_a_cleaned_copy(hf_model, corpus, tmp_path):
    settings = {"input": str(corpus), "output_prefix": str(tmp_path / "o" / "lm"), "tokenizer": "hf",
                "tokenizer_model": str(hf_model), "dedup": True}
    prepare(build_config(settings), progress=False)
    assert (tmp_path / "o" / ".work" / "clean" / "train.text").exists()


PREPROCESS_DATA_WRITER = """
import numpy as np, torch
from megatron.core.datasets.indexed_dataset import DType, IndexedDatasetBuilder
# preprocess_data's writer: one document per JSON row, EOD only after a document with ids (--append-eod)
for job in PAYLOAD:  # one store per --append-eod setting, in one peer run (its start imports torch)
    builder = IndexedDatasetBuilder(job["prefix"] + ".bin", dtype=DType.optimal_dtype(job["vocab_size"]))
    for ids in job["documents"]:
        if ids and job["append_eod"]:
            ids = ids + [job["eod"]]
        builder.add_document(torch.tensor(ids, dtype=torch.int64), [len(ids)] if ids else [])
    builder.finalize(job["prefix"] + ".idx")
print("RESULT:" + json.dumps("ok"))
"""


@pytest.fixture(scope="module")
def documents_without_ids(hf_model, tmp_path_factory) -> Path:
    """``in.jsonl`` (60 documents, 4 of them empty) and megatron-core's stores of it as preprocess_data
    writes them, ``peer-True`` / ``peer-False`` by --append-eod, made in one peer run; only read."""
    root = tmp_path_factory.mktemp("without-ids")
    docs = documents(60)
    for i in (0, 7, 8, 59):  # first, two in a row, last
        docs[i] = ""
    (root / "in.jsonl").write_text("".join(json.dumps({"text": d}) + "\n" for d in docs), encoding="utf-8")
    reference = tokenizers.Tokenizer.from_file(str(hf_model))
    ids = [e.ids for e in reference.encode_batch(docs, add_special_tokens=False)]
    run_peer("megatron", PREPROCESS_DATA_WRITER, [
        {"prefix": str(root / f"peer-{append_eod}"), "documents": ids, "append_eod": append_eod,
         "eod": reference.token_to_id(ENDOFTEXT), "vocab_size": reference.get_vocab_size()}
        for append_eod in (True, False)])
    return root


@pytest.mark.megatron
@pytest.mark.parametrize("append_eod", [True, False])
def test_documents_without_ids_are_what_preprocess_data_writes(hf_model, documents_without_ids, tmp_path,
                                                               append_eod):
    """A JSON row whose text gives no ids is a document without a sequence (no lone EOD): the .bin and
    .idx equal, byte for byte, what megatron-core's builder writes when fed as preprocess_data feeds it,
    cut into tasks or not."""
    peer = documents_without_ids / f"peer-{append_eod}"
    for tasks in (None, 2):
        out = tmp_path / f"tasks-{tasks}"
        settings = {**megatron_run(documents_without_ids / "in.jsonl", out / "lm", "HuggingFaceTokenizer",
                                   tokenizer_model=hf_model), "append_eod": append_eod,
                    **({"tasks": tasks} if tasks else {})}
        prepare(build_config(settings), progress=False)
        for suffix in (".bin", ".idx"):
            assert (out / f"lm_text_document{suffix}").read_bytes() == peer.with_suffix(suffix).read_bytes()
        assert verify_directory(out) == []
    store = IndexedDataset(tmp_path / "tasks-None" / "lm_text_document")
    assert len(store) == 56 and len(store.document_indices) == 61


def store_documents(prefix: Path) -> list[list[list[int]]]:
    """The store's documents in order, each the list of its sequences' ids (an empty list: no sequence)."""
    store = IndexedDataset(prefix)
    bounds = store.document_indices.tolist()
    return [[store[i].tolist() for i in range(a, b)] for a, b in itertools.pairwise(bounds)]


@pytest.mark.parametrize("tasks", [None, 2])
def test_shards_of_documents_without_ids_each_hold_sequences(hf_model, tmp_path, tasks):
    """With --shard-size, documents without ids stay with the shard before them: a shard starts at a
    document with a sequence, so none is left holding no sequence (a 0-token dataset Megatron cannot
    sample from), and the shards' documents in order are the unsharded store's."""
    docs = documents(23)
    for i in (5, 6, 8, 21, 22):  # two inside the first shard, one right after it fills, two after the last fills
        docs[i] = ""
    (tmp_path / "in.jsonl").write_text("".join(json.dumps({"text": d}) + "\n" for d in docs), encoding="utf-8")
    made = {}
    for shard_size in (0, 6):
        out = tmp_path / f"shards-{shard_size}"
        settings = {**megatron_run(tmp_path / "in.jsonl", out / "lm", "HuggingFaceTokenizer", tokenizer_model=hf_model),
                    "shard_size": shard_size, **({"tasks": tasks} if tasks else {})}
        summary = prepare(build_config(settings), progress=False)
        prefixes = sorted(out.glob("shard*/lm_text_document.idx")) if shard_size else [out / "lm_text_document.idx"]
        made[shard_size] = [store_documents(p.with_suffix("")) for p in prefixes]
        recorded = list(summary.splits["train"]["langs"].values())
        assert [(r["sentences"], r["shards"]) for r in recorded] == [(18, 3 if shard_size else 0)]
        assert verify_directory(out) == []
    whole = made[0][0]
    assert len(whole) == 23 and sum(1 for d in whole if not d) == 5
    shards = made[6]
    assert [sum(len(d) for d in shard) for shard in shards] == [6, 6, 6], "every shard holds sequences"
    assert all(shard[0] for shard in shards[1:]), "a shard starts at a document with a sequence"
    assert [d for shard in shards for d in shard] == whole


def test_a_folder_binarized_before_the_empty_document_rule_is_binarized_again(hf_model, tmp_path, monkeypatch):
    """A folder whose stores hold a lone EOD for a document without ids (as tokenmill wrote them before) is
    not trusted by the next run: the binarize key differs, so the stores are written again."""
    from tokenmill.prepare.stages import binarize

    docs = documents(12)
    docs[3] = ""
    (tmp_path / "in.jsonl").write_text("".join(json.dumps({"text": d}) + "\n" for d in docs), encoding="utf-8")
    settings = megatron_run(tmp_path / "in.jsonl", tmp_path / "out" / "lm", "HuggingFaceTokenizer",
                            tokenizer_model=hf_model)
    with monkeypatch.context() as old:
        old.setattr(binarize, "empty_documents", lambda ctx: False)
        prepare(build_config(settings), progress=False)
    before = IndexedDataset(tmp_path / "out" / "lm_text_document")
    assert len(before) == 12 and len(before[3]) == 1, "the old rule: the empty document is a lone EOD"
    prepare(build_config(settings), progress=False)
    after = store_documents(tmp_path / "out" / "lm_text_document")
    assert len(after) == 12 and after[3] == [] and sum(len(d) for d in after) == 11
    assert verify_directory(tmp_path / "out") == []
