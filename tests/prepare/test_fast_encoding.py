"""prepare with the fast encoder (``--encoder auto|fast``) writes the stores the reference library writes, byte for
byte, for every model kind the fast encoder supports, on 100k held-out multilingual documents (one of 1 MB,
special-token text, NFC/NFKC-sensitive characters, empty ones, lone surrogates escaped in the JSON for
tiktoken);
megatron-core reads them; a fast encoder that gets ids wrong is caught by the run's check (auto: one warning,
the reference's store, the manifest says why; fast: one error); and the encoder is no part of a stage key."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from tests.peers import run_peer
from tests.vocab import wrong_fast
from tests.vocab.fast_corpus import held_out_documents, train_models
from tokenmill.errors import ConfigError
from tokenmill.prepare import build_config, prepare
from tokenmill.store import IndexedDataset
from tokenmill.vocab.fast_encoder import FAST_BUILDERS

pytest.importorskip("gigatoken")

DOCUMENTS = 100_000
KINDS = {  # model kind -> (Megatron --tokenizer-type, the encoder setting of the fast run)
    "hf-byte-level-bpe": ("HuggingFaceTokenizer", "auto"),
    "tiktoken-cl100k": ("TikTokenizer", "fast"),
    "sentencepiece-bpe-byte-fallback": ("SentencePieceTokenizer", "fast"),
}
SURROGATES = ['{"text": "lone \\ud800 high"}', '{"text": "\\udfff lone low"}', '{"text": "pair \\ud83d\\ude00 ok"}']
"""JSON lines whose text holds a lone surrogate (not text: the reader refuses it, or replaces it with U+FFFD under
``--on-invalid-utf8 replace``), and a proper pair."""


def write_jsonl(path: Path, docs: list[str], extra_lines: list[str] = ()) -> Path:
    lines = [json.dumps({"text": doc}, ensure_ascii=i % 2 == 0) for i, doc in enumerate(docs)]
    for k, line in enumerate(extra_lines):
        lines.insert(1000 + 7919 * k, line)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run(corpus: Path, out: Path, tokenizer_type: str, model: Path, encoder: str, **more: object):
    settings = {"input": str(corpus), "output_prefix": str(out / "lm"), "json_keys": "text",
                "tokenizer_type": tokenizer_type, "tokenizer_model": str(model), "append_eod": True, "workers": 2,
                "encoder": encoder, **more}
    return prepare(build_config(settings), progress=False)


def manifest_run(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text(encoding="utf-8"))["run"]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return train_models(tmp_path_factory.mktemp("fast-models"))


@pytest.fixture(scope="module")
def runs(models, tmp_path_factory):
    """Each kind prepared twice from the same 100k documents: by the reference library and by the fast encoder."""
    folder = tmp_path_factory.mktemp("fast-runs")
    docs = held_out_documents(DOCUMENTS, seed=71, long_chars=1 << 20)
    plain = write_jsonl(folder / "docs.jsonl", docs)
    with_surrogates = write_jsonl(folder / "docs-surrogates.jsonl", docs, SURROGATES)
    made = {}
    for kind, (tokenizer_type, encoder) in KINDS.items():
        corpus = with_surrogates if kind.startswith("tiktoken") else plain
        # a lone surrogate is not text: the reader replaces it with U+FFFD when told (default: an error)
        policy = {"on_invalid_utf8": "replace"} if corpus is with_surrogates else {}
        for side in ("reference", encoder):
            run(corpus, folder / kind / side, tokenizer_type, models[kind].path, side, **policy)
        made[kind] = (folder / kind / "reference", folder / kind / encoder)
    return made


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(KINDS))
def test_the_fast_encoders_stores_equal_the_reference_stores_byte_for_byte(runs, kind):
    reference, fast = runs[kind]
    for suffix in (".bin", ".idx"):
        ours, theirs = (folder / f"lm_text_document{suffix}" for folder in (fast, reference))
        assert ours.read_bytes() == theirs.read_bytes(), f"{kind}: {suffix} differs"
    store = IndexedDataset(reference / "lm_text_document")
    assert 99_000 < len(store) <= DOCUMENTS + len(SURROGATES)  # empty documents are left out, as Megatron does
    assert int(store.sizes.max()) > 100_000  # the 1 MB document
    record = manifest_run(fast)["encoders"]["encode.train.text"]
    assert record["encoder"].startswith("gigatoken") and record["mode"] == KINDS[kind][1]
    assert record["check"]["matched"] is True and record["check"]["documents"] > 1000
    assert manifest_run(reference)["encoders"]["encode.train.text"] == {"mode": "reference", "encoder": "reference"}
    assert manifest_run(fast)["warnings"] == []


@pytest.mark.slow
@pytest.mark.megatron
def test_megatron_core_reads_the_fast_encoders_stores(runs):
    stores = {kind: str(fast / "lm_text_document") for kind, (_, fast) in runs.items()}
    picks = {kind: sorted({0, 1, len(store) // 2, len(store) - 1, int(store.sizes.argmax())})
             for kind, store in ((k, IndexedDataset(p)) for k, p in stores.items())}
    seen = run_peer("megatron", """
import hashlib
import numpy
from megatron.core.datasets.indexed_dataset import IndexedDataset
out = {}
for kind, (prefix, picks) in PAYLOAD.items():
    ds = IndexedDataset(prefix, multimodal=False, mmap=True)
    out[kind] = {"n": len(ds), "items": [ds[i].tolist() for i in picks],
                 "sizes": hashlib.sha256(numpy.asarray(ds.sequence_lengths, numpy.int64).tobytes()).hexdigest(),
                 "docs": hashlib.sha256(numpy.asarray(ds.document_indices, numpy.int64).tobytes()).hexdigest()}
print("RESULT:" + json.dumps(out))
""", {kind: [prefix, picks[kind]] for kind, prefix in stores.items()})
    for kind, prefix in stores.items():
        store = IndexedDataset(prefix)
        assert seen[kind] == {"n": len(store), "items": [store[i].tolist() for i in picks[kind]],
                              "sizes": hashlib.sha256(store.sizes.astype(np.int64).tobytes()).hexdigest(),
                              "docs": hashlib.sha256(store.document_indices.astype(np.int64).tobytes()).hexdigest()}
        assert max(map(len, seen[kind]["items"])) > 100_000  # the 1 MB document, read whole


# ---------------------------------------------------------------- a wrong fast encoder, and stage keys


@pytest.fixture
def small(models, tmp_path):
    docs = held_out_documents(3000, seed=72, long_chars=50_000)
    return write_jsonl(tmp_path / "small.jsonl", docs), models["hf-byte-level-bpe"].path


def test_auto_falls_back_to_the_reference_with_one_warning_when_the_check_fails(small, tmp_path, monkeypatch, caplog):
    corpus, model = small
    run(corpus, tmp_path / "reference", "HuggingFaceTokenizer", model, "reference")
    monkeypatch.setitem(FAST_BUILDERS, "hf", wrong_fast.TARGET)
    with caplog.at_level("WARNING"):
        run(corpus, tmp_path / "auto", "HuggingFaceTokenizer", model, "auto")
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and warnings[0].startswith("warning: wrong-gigatoken gave other ids than hf on ")
    assert "\n" not in warnings[0] and warnings[0].endswith("encoded with hf instead")
    for suffix in (".bin", ".idx"):
        assert ((tmp_path / "auto" / f"lm_text_document{suffix}").read_bytes()
                == (tmp_path / "reference" / f"lm_text_document{suffix}").read_bytes())
    record = manifest_run(tmp_path / "auto")
    assert record["warnings"] == [warnings[0].removeprefix("warning: ")]
    encoder = record["encoders"]["encode.train.text"]
    assert encoder["encoder"] == "reference" and encoder["mode"] == "auto" and "gave other ids" in encoder["why"]
    assert encoder["check"]["matched"] is False and encoder["check"]["mismatches"] > 0


def test_fast_fails_with_one_error_when_the_check_fails(small, tmp_path, monkeypatch):
    corpus, model = small
    monkeypatch.setitem(FAST_BUILDERS, "hf", wrong_fast.TARGET)
    with pytest.raises(ConfigError) as error:
        run(corpus, tmp_path / "fast", "HuggingFaceTokenizer", model, "fast")
    assert str(error.value).startswith("--encoder fast: wrong-gigatoken gave other ids than hf on ")
    assert "\n" not in str(error.value) and not (tmp_path / "fast" / "lm_text_document.bin").exists()


def test_the_encoder_is_no_part_of_the_encode_stage_key(small, tmp_path):
    corpus, model = small
    first = run(corpus, tmp_path / "out", "HuggingFaceTokenizer", model, "reference")
    assert "encode.train.text" in first.ran
    before = (tmp_path / "out" / "lm_text_document.bin").read_bytes()
    again = run(corpus, tmp_path / "out", "HuggingFaceTokenizer", model, "auto", encoder_check_docs=10)
    assert "encode.train.text" in again.skipped and "encode.train.text" not in again.ran
    assert (tmp_path / "out" / "lm_text_document.bin").read_bytes() == before
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text(encoding="utf-8"))
    assert "encoder" not in manifest["settings"] and manifest["run"]["encoder"] == "auto"


# ---------------------------------------------------------------- encode cut into tasks


def test_tasks_run_the_coordinators_checked_choice_and_write_the_same_bytes(small, tmp_path):
    """--tasks 1 and 3 with the fast encoder write the reference's one-process store, byte for byte; the coordinator
    checked the fast encoder once (its record is in the plan and the manifest) and every task ran it."""
    corpus, model = small
    run(corpus, tmp_path / "reference", "HuggingFaceTokenizer", model, "reference")
    for tasks in (1, 3):
        out = tmp_path / f"tasks-{tasks}"
        summary = run(corpus, out, "HuggingFaceTokenizer", model, "auto", tasks=tasks)
        assert len(summary.tasks["encode.train.text"]) == tasks
        for suffix in (".bin", ".idx"):
            assert ((out / f"lm_text_document{suffix}").read_bytes()
                    == (tmp_path / "reference" / f"lm_text_document{suffix}").read_bytes()), f"{tasks} tasks: {suffix}"
        record = manifest_run(out)["encoders"]["encode.train.text"]
        assert record["encoder"].startswith("gigatoken") and record["check"]["matched"] is True
        assert "tasks_ran" not in record  # every task ran the planned encoder
    checks = [manifest_run(tmp_path / f"tasks-{n}")["encoders"]["encode.train.text"]["check"] for n in (1, 3)]
    one, three = ({k: v for k, v in check.items() if k != "seconds"} for check in checks)
    assert one == three  # the same sample whatever the task count


def test_tasks_obey_a_failed_check_and_run_the_reference(small, tmp_path, monkeypatch, caplog):
    corpus, model = small
    run(corpus, tmp_path / "reference", "HuggingFaceTokenizer", model, "reference")
    monkeypatch.setitem(FAST_BUILDERS, "hf", wrong_fast.TARGET)
    with caplog.at_level("WARNING"):
        run(corpus, tmp_path / "tasks", "HuggingFaceTokenizer", model, "auto", tasks=3)
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and warnings[0].startswith("warning: wrong-gigatoken gave other ids than hf on ")
    assert ((tmp_path / "tasks" / "lm_text_document.bin").read_bytes()
            == (tmp_path / "reference" / "lm_text_document.bin").read_bytes())
    record = manifest_run(tmp_path / "tasks")["encoders"]["encode.train.text"]
    assert record["encoder"] == "reference" and "gave other ids" in record["why"]
