"""Golden files made by fairseq, so CI checks fairseq equivalence without a fairseq install.

Regenerate (needs the fairseq peer; see tests/batching/fairseq_peer.py)::

    TOKENMILL_FAIRSEQ_PYTHON=/path/to/fairseq/venv/bin/python python -m tests.batching.fairseq_golden

Each ``golden/plan_<name>.npz`` holds the inputs (source and target lengths) and fairseq's output:
its frozen batches (``flat`` ids + ``lengths``) and the batch order of epochs 1-3 (``epoch<e>``).
``golden/task.npz`` holds a small corpus (keys ``corpus.*``: tokens, lengths, alignments) and every
collated batch of fairseq's ``TranslationTask`` iterator over it (epoch 1), keys ``b<i>.<field>``.
All arrays are plain numeric (loaded with ``allow_pickle=False``).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np

from tests.batching.corpus import make_pair_dir, pair_lengths, write_dict
from tests.batching.fairseq_peer import require_fairseq, run_jobs
from tokenmill.store import IndexedDataset, IndexedWriter

GOLDEN = Path(__file__).with_name("golden")

PLAN_CASES = {
    "fp16_multiple": {
        "n": 3000,
        "seed": 11,
        "max_tokens": 400,
        "max_sentences": None,
        "multiple": 8,
        "max_positions": None,
    },
    "sentences_cap": {
        "n": 2500,
        "seed": 3,
        "max_tokens": 4096,
        "max_sentences": 48,
        "multiple": 1,
        "max_positions": None,
    },
    "length_filter": {
        "n": 2000,
        "seed": 7,
        "max_tokens": 600,
        "max_sentences": None,
        "multiple": 3,
        "max_positions": [25, 30],
    },
}
PLAN_EPOCHS = (1, 2, 3)
TASK_CASE = {"n": 160, "seed": 5, "max_tokens": 240, "multiple": 8, "batch_seed": 9}
TASK_FIELDS = (
    "id",
    "src_tokens",
    "src_lengths",
    "prev_output_tokens",
    "target",
    "ntokens",
    "alignments",
    "align_weights",
)


def plan_inputs(name: str) -> tuple[np.ndarray, np.ndarray]:
    case = PLAN_CASES[name]
    src, tgt = pair_lengths(case["n"], case["seed"], mean=2.6, top=90)
    return (src + 1).astype(np.int64), (tgt + 1).astype(np.int64)


def task_alignments(src: np.ndarray, tgt: np.ndarray, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    lines = []
    for a, b in zip(src.tolist(), tgt.tolist(), strict=True):
        count = int(rng.integers(0, 4))
        lines.append(" ".join(f"{rng.integers(0, a)}-{rng.integers(0, b)}" for _ in range(count)))
    lines[3] = f"0-0 {src[3]}-0"  # reaches the source's </s>: fairseq skips this row's alignments
    return lines


def regenerate() -> None:
    require_fairseq()
    GOLDEN.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        jobs = []
        for name, case in PLAN_CASES.items():
            src, tgt = plan_inputs(name)
            np.save(work / f"{name}.src.npy", src)
            np.save(work / f"{name}.tgt.npy", tgt)
            jobs.append(
                {
                    "id": name,
                    "kind": "plan",
                    "src": f"{name}.src.npy",
                    "tgt": f"{name}.tgt.npy",
                    "seed": case["seed"],
                    "max_tokens": case["max_tokens"],
                    "max_sentences": case["max_sentences"],
                    "multiple": case["multiple"],
                    "max_positions": case["max_positions"],
                    "epochs": list(PLAN_EPOCHS),
                }
            )
        c = TASK_CASE
        src, tgt = pair_lengths(c["n"], c["seed"])
        aligns = task_alignments(src, tgt, c["seed"])
        data = make_pair_dir(work / "data", lengths=(src, tgt), seed=c["seed"], alignments=aligns)
        jobs.append(
            {
                "id": "task",
                "kind": "task",
                "data": str(data),
                "src_lang": "en",
                "tgt_lang": "de",
                "max_tokens": c["max_tokens"],
                "multiple": c["multiple"],
                "seed": c["batch_seed"],
                "alignments": True,
            }
        )
        results = run_jobs(work, jobs)
        for name in PLAN_CASES:
            src, tgt = plan_inputs(name)
            arrays = {
                "src": src,
                "tgt": tgt,
                "flat": np.load(work / f"{name}.flat.npy"),
                "lengths": np.load(work / f"{name}.lengths.npy"),
            }
            for epoch in PLAN_EPOCHS:
                arrays[f"epoch{epoch}"] = np.load(work / f"{name}.epoch{epoch}.npy")
            np.savez_compressed(GOLDEN / f"plan_{name}.npz", **arrays)
        task = {}
        for key, suffix in (("src", "en"), ("tgt", "de"), ("align", "align")):
            store = IndexedDataset(data / ("train.align.en-de" if key == "align" else f"train.en-de.{suffix}"))
            task[f"corpus.{key}_tokens"], offsets = store.gather(np.arange(len(store)))
            task[f"corpus.{key}_lengths"] = np.diff(offsets)
        for i in range(results["task"]["num_batches"]):
            for field in TASK_FIELDS:
                path = work / f"task.b{i}.{field}.npy"
                if path.exists():
                    task[f"b{i}.{field}"] = np.load(path)
        np.savez_compressed(GOLDEN / "task.npz", **task)
        (GOLDEN / "README.json").write_text(
            json.dumps(
                {"made_by": "tests/batching/fairseq_golden.py", "plan_cases": PLAN_CASES, "task": TASK_CASE}, indent=1
            )
        )


def write_task_corpus(root: Path, task: dict[str, np.ndarray]) -> Path:
    """Re-create the golden task's data directory from the arrays stored in ``task.npz``."""
    root.mkdir(parents=True, exist_ok=True)
    for key, name, dtype in (
        ("src", "train.en-de.en", np.uint16),
        ("tgt", "train.en-de.de", np.uint16),
        ("align", "train.align.en-de", np.int32),
    ):
        with IndexedWriter(root / name, layout="fairseq", dtype=dtype) as writer:
            writer.add_items(task[f"corpus.{key}_tokens"].astype(dtype), task[f"corpus.{key}_lengths"])
    for lang in ("en", "de"):
        write_dict(root / f"dict.{lang}.txt")
    return root


def load(name: str) -> dict[str, np.ndarray]:
    with np.load(GOLDEN / name, allow_pickle=False) as archive:
        return {key: archive[key] for key in archive.files}


if __name__ == "__main__":
    regenerate()
    print(f"wrote {sorted(p.name for p in GOLDEN.iterdir())}", file=sys.stderr)
