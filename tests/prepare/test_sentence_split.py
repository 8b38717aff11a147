"""prepare with Megatron's ``--split-sentences``: each JSON document cut into sentences (sentencex), each sentence
with ids one sequence, documents in the document index, EOD after a document's last sentence only. The oracle
is megatron-core itself: its ``IndexedDatasetBuilder.add_document`` fed the same sentences (split by the same
splitter here, encoded by the reference tokenizer, as ``tools/preprocess_data.py``'s ``Encoder.encode`` does)
writes the same ``.bin``/``.idx`` bytes, and its ``IndexedDataset`` reads ours."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import sentencepiece
import tokenizers

from tests.peers import run_peer
from tests.prepare.test_megatron_flags import ENDOFTEXT, LINES, documents, spm_model  # noqa: F401 (a fixture)
from tests.prepare.test_tasks import run_cli
from tokenmill.errors import ConfigError
from tokenmill.prepare import build_config, encode_workers, prepare
from tokenmill.store import IndexedDataset
from tokenmill.store.manifest import verify_directory
from tokenmill.store.provenance import Provenance
from tokenmill.text.sentences import make_splitter, split_documents
from tokenmill.vocab.tokenizer import train_tokenizer

EXTRA = [
    "Dr. Smith went to Washington. He arrived at 5 p.m. and left!  Did he stay? No.",
    "",  # no text at all
    "   \n\t  ",  # only whitespace: no sentence, no ids
    "One line.\nAnother line.\n\nA paragraph after a blank line.\n",
    "no final punctuation here",
]

_MEGATRON_BUILDER = """
import numpy as np
from megatron.core.datasets.indexed_dataset import DType, IndexedDataset, IndexedDatasetBuilder
builder = IndexedDatasetBuilder(PAYLOAD["out"] + ".bin", dtype=DType.optimal_dtype(PAYLOAD["vocab_size"]))
for sentences in PAYLOAD["documents"]:  # tools/preprocess_data.py's Encoder.encode, then add_document
    doc_ids, sentence_lens = [], []
    for sentence_ids in sentences:
        if len(sentence_ids) > 0:
            doc_ids.extend(sentence_ids)
            sentence_lens.append(len(sentence_ids))
    if len(doc_ids) > 0 and PAYLOAD["eod"] is not None:
        doc_ids.append(PAYLOAD["eod"])
        sentence_lens[-1] += 1
    builder.add_document(doc_ids, sentence_lens)
builder.finalize(PAYLOAD["out"] + ".idx")
ours = IndexedDataset(PAYLOAD["ours"])
print("RESULT:" + json.dumps({"documents": ours.document_indices.tolist(), "length": len(ours),
                              "items": [ours.get(i).tolist() for i in range(len(ours))]}))
"""


@pytest.fixture(scope="module")
def hf_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("hf") / "tokenizer.json"
    train_tokenizer("hf", LINES, {"kind": "byte-level-bpe", "vocab_size": 1200}, path)
    return path


def corpus_docs() -> list[str]:
    docs = documents(120)
    return docs[:40] + EXTRA + docs[40:]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("jsonl") / "corpus.jsonl"
    path.write_text("".join(json.dumps({"text": d}, ensure_ascii=False) + "\n" for d in corpus_docs()),
                    encoding="utf-8")
    return path


def settings(corpus: Path, prefix: Path, model: Path, **extra: object) -> dict:
    """``preprocess_data.py --input corpus --output-prefix prefix --tokenizer-type HuggingFaceTokenizer
    --tokenizer-model model --append-eod --split-sentences --workers 2`` plus ``extra``."""
    return {"input": str(corpus), "output_prefix": str(prefix), "tokenizer_type": "HuggingFaceTokenizer",
            "tokenizer_model": str(model), "append_eod": True, "split_sentences": True, "workers": 2, **extra}


def store_bytes(prefix: Path) -> list[bytes]:
    return [Path(f"{prefix}{ext}").read_bytes() for ext in (".bin", ".idx")]


@pytest.mark.parametrize("keep_newlines", [False, True])
def test_sentences_are_megatron_cores_own_bytes(hf_model, corpus, tmp_path, keep_newlines):
    prepare(build_config(settings(corpus, tmp_path / "out" / "lm", hf_model, keep_newlines=keep_newlines)),
            progress=False)
    ours = tmp_path / "out" / "lm_text_sentence"
    reference = tokenizers.Tokenizer.from_file(str(hf_model))
    sentences, counts = split_documents(corpus_docs(), make_splitter("sentencex", "english"),
                                        keep_newlines=keep_newlines)
    ids = [e.ids for e in reference.encode_batch(sentences, add_special_tokens=False)]
    cuts = np.concatenate([[0], np.cumsum(counts)])
    per_document = [ids[cuts[i]:cuts[i + 1]] for i in range(len(counts))]
    eod = reference.token_to_id(ENDOFTEXT)
    result = run_peer("megatron", _MEGATRON_BUILDER, {
        "out": str(tmp_path / "megatron_text_sentence"), "ours": str(ours), "documents": per_document,
        "eod": eod, "vocab_size": reference.get_vocab_size()})
    assert store_bytes(ours) == store_bytes(tmp_path / "megatron_text_sentence")
    assert result["length"] > len(counts), "more sentences than documents"
    assert len(result["documents"]) == len(counts) + 1, "megatron-core reads one entry per document"
    assert result["documents"][41] == result["documents"][42] == result["documents"][43], "no sentence: no sequence"
    assert verify_directory(tmp_path / "out") == []


def test_eod_ends_each_document_only_and_sentences_join_to_the_document(hf_model, corpus, tmp_path):
    prepare(build_config(settings(corpus, tmp_path / "lm", hf_model)), progress=False)
    store = IndexedDataset(tmp_path / "lm_text_sentence")
    reference = tokenizers.Tokenizer.from_file(str(hf_model))
    eod = reference.token_to_id(ENDOFTEXT)
    bounds = store.document_indices.tolist()
    docs = corpus_docs()
    assert len(bounds) == len(docs) + 1
    for k, doc in enumerate(docs):
        items = [store[i].tolist() for i in range(bounds[k], bounds[k + 1])]
        if not doc.strip():
            assert items == []
            continue
        assert items[-1][-1] == eod and all(eod not in item for item in items[:-1])
        assert all(len(item) > 0 for item in items)
        text = " ".join(reference.decode([t for t in item if t != eod]) for item in items)
        assert text.split() == doc.split(), "the sentences hold the document's words, in order"
    assert sum(int(np.count_nonzero(store[i] == eod)) for i in range(len(store))) == sum(1 for d in docs if d.strip())


def test_any_task_count_and_encoder_give_the_same_bytes_and_provenance(hf_model, corpus, tmp_path):
    one = tmp_path / "one" / "lm"
    prepare(build_config(settings(corpus, one, hf_model, tasks=1, encoder="reference")), progress=False)
    three = tmp_path / "three" / "lm"
    summary = prepare(build_config(settings(corpus, three, hf_model, tasks=3, encoder="auto")), progress=False)
    used = summary.encoders["encode.train.text"]["encoder"]
    assert used.startswith("gigatoken") or importlib.util.find_spec("gigatoken") is None, "the fast encoder ran"
    manifest = json.loads((tmp_path / "three" / "manifest.json").read_text())
    assert len(manifest["run"]["tasks"]["binarize.train.text"]) == 3, "binarized as tasks, parts merged"
    for name in ("lm_text_sentence.bin", "lm_text_sentence.idx", "lm_text_sentence.prov"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "three" / name).read_bytes(), name
    prov = Provenance(tmp_path / "three" / "lm_text_sentence.prov")
    documents = len(IndexedDataset(tmp_path / "three" / "lm_text_sentence").document_indices) - 1
    _, lines = prov.table.locate(prov.numbers_of(np.arange(documents)))
    assert lines.tolist() == list(range(1, len(corpus_docs()) + 1)), "document k is line k + 1 of the input"


@pytest.mark.parametrize("tasks", [1, 3])
def test_a_token_count_filter_drops_whole_documents_with_their_sentences(hf_model, corpus, tmp_path, tasks):
    """--filter-max-tokens counts a document's ids (its sentences together) and drops the whole document; the
    provenance map leads the documents that stay to their lines."""
    prepare(build_config(settings(corpus, tmp_path / "all" / "lm", hf_model)), progress=False)
    prepare(build_config(settings(corpus, tmp_path / "some" / "lm", hf_model, tasks=tasks,
                                  filters={"drop_empty": False, "max_tokens": 40})), progress=False)
    everything = IndexedDataset(tmp_path / "all" / "lm_text_sentence")
    kept = IndexedDataset(tmp_path / "some" / "lm_text_sentence")

    def document(store: IndexedDataset, k: int) -> list[list[int]]:
        bounds = store.document_indices
        return [store[i].tolist() for i in range(bounds[k], bounds[k + 1])]

    ids = [sum(len(item) for item in document(everything, k)) for k in range(len(corpus_docs()))]
    stay = [k for k, n in enumerate(ids) if n - (n > 0) <= 40]  # the filter counts ids before the EOD
    assert 0 < len(stay) < len(ids)
    assert [document(kept, j) for j in range(len(stay))] == [document(everything, k) for k in stay]
    prov = Provenance(tmp_path / "some" / "lm_text_sentence.prov")
    _, lines = prov.table.locate(prov.numbers_of(np.arange(len(stay))))
    assert lines.tolist() == [k + 1 for k in stay]


def test_sentencepiece_stores_each_sentences_own_ids(spm_model, corpus, tmp_path, monkeypatch):  # noqa: F811
    """SentencePiece's encode stage runs on worker processes (here: from 16 documents on) without
    --split-sentences; with it the sentences are encoded in this process (by SentencePiece's own threads)."""
    monkeypatch.setattr(encode_workers, "RANGE_LINES", 16)
    config = build_config({**settings(corpus, tmp_path / "spm" / "lm", spm_model, lang="en", workers=2),
                           "tokenizer_type": "SentencePieceTokenizer",  # a filter that keeps every document: the
                           "filters": {"drop_empty": False, "not_too_long": 10**6}})  # encode stage reads a clean file
    prepare(config, progress=False)
    store = IndexedDataset(tmp_path / "spm" / "lm_text_sentence")
    reference = sentencepiece.SentencePieceProcessor(model_file=str(spm_model))
    sentences, counts = split_documents(corpus_docs(), make_splitter("sentencex", "en"))
    ids = reference.encode(sentences)
    expected, bounds, start = [], [0], 0
    for count in counts.tolist():
        doc = [i for i in ids[start : start + count] if i]
        start += count
        if doc:
            doc[-1] = [*doc[-1], reference.eos_id()]
        expected += doc
        bounds.append(len(expected))
    assert [store[i].tolist() for i in range(len(store))] == expected
    assert store.document_indices.tolist() == bounds
    assert verify_directory(tmp_path / "spm") == []


def test_the_command_line_with_megatrons_flags(hf_model, corpus, tmp_path):
    done = run_cli("--input", str(corpus), "--output-prefix", str(tmp_path / "cli" / "c"), "--tokenizer-type",
                   "HuggingFaceTokenizer", "--tokenizer-model", str(hf_model), "--append-eod", "--split-sentences",
                   "--lang", "english", "--keep-newlines", "--workers", "2", "-q", "--no-report")
    assert done.returncode == 0, done.stderr
    store = IndexedDataset(tmp_path / "cli" / "c_text_sentence")
    assert len(store.document_indices) == len(corpus_docs()) + 1 and len(store) > len(corpus_docs())
    assert not (tmp_path / "cli" / "c_text_document.bin").exists()


@pytest.mark.parametrize(("extra", "message"), [
    ({"lang": "klingon"}, "--lang klingon: not a language of --split-sentences"),
    ({"sentence_splitter": "nope"}, "--sentence-splitter nope: no such splitter (known: sentencex)"),
    ({"shard_size": 10}, "--split-sentences writes one store, as Megatron does: drop --shard-size"),
])
def test_settings_that_cannot_split_sentences_are_one_error(hf_model, corpus, tmp_path, extra, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        build_config(settings(corpus, tmp_path / "lm", hf_model, **extra))


def test_without_megatrons_output_prefix_it_is_one_error(tmp_path):
    (tmp_path / "train.en").write_text("One. Two.\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="--split-sentences comes with Megatron's --input and --output-prefix"):
        build_config({"source_lang": "en", "trainpref": str(tmp_path / "train"), "destdir": str(tmp_path / "o"),
                      "tokenizer": "hf", "split_sentences": True})


def test_a_missing_splitter_package_names_the_extra(hf_model, corpus, tmp_path):
    hide = "import sys; sys.modules['sentencex'] = None; from tokenmill.cli import main; main()"
    done = subprocess.run([sys.executable, "-c", hide, "prepare", "--input", str(corpus), "--output-prefix",
                           str(tmp_path / "out" / "lm"), "--tokenizer-type", "HuggingFaceTokenizer",
                           "--tokenizer-model", str(hf_model), "--split-sentences", "-q"],
                          capture_output=True, text=True)
    assert done.returncode == 2, done.stderr
    assert "error: --split-sentences (--sentence-splitter sentencex) needs sentencex: pip install " \
           "'tokenmill[sentences]'" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()
