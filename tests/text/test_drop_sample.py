"""DropSample and the Cleaner's dropped-item samples: deterministic whatever the chunking or workers."""

from __future__ import annotations

import json
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from tokenmill.text import CleanConfig, Cleaner, FilterConfig, LeakageFilter, Normalizer, ParallelFiles, ReadOptions
from tokenmill.text.drop_sample import MAX_CHARS, DropSample, line_keys
from tokenmill.text.readers import Chunk

CONFIG = CleanConfig(
    Normalizer(),
    FilterConfig(max_tokens=6, max_ratio=3, drop_identical=True, max_nonletter=0.5),
)


def _corpus(tmp_path: Path, n: int = 240) -> tuple[Path, Path]:
    """Train pairs with every kind of drop spread over the file, and a held-out test set."""
    rng = np.random.default_rng(7)
    src, tgt = [], []
    for i in range(n):
        kind = rng.integers(0, 8)
        if kind == 0:
            s, t = "", f"target {i}"
        elif kind == 1:
            s, t = " ".join(f"w{i}x{j}" for j in range(9)), "short one"
        elif kind == 2:
            s, t = f"a{i}", f"b{i} c d e f"
        elif kind == 3:
            s = t = f"same text {i}"
        elif kind == 4:
            s, t = f"12345 {i} 6789", f"ziffern {i}"
        elif kind == 5:
            s, t = "repeated pair", "wiederholtes paar"
        elif kind == 6:
            s, t = "held out", "zurückgehalten"
        else:
            s, t = f"good source {i}", f"guter satz {i}"
        src.append(s)
        tgt.append(t)
    (tmp_path / "train.en").write_text("\n".join(src) + "\n", encoding="utf-8")
    (tmp_path / "train.de").write_text("\n".join(tgt) + "\n", encoding="utf-8")
    (tmp_path / "test.en").write_text("held out\n", encoding="utf-8")
    (tmp_path / "test.de").write_text("zurückgehalten\n", encoding="utf-8")
    return tmp_path / "train", tmp_path / "test"


def _leakage(test: Path) -> LeakageFilter:
    leak = LeakageFilter("pair")
    for chunk in ParallelFiles.from_prefixes(test, "en", "de").chunks():
        leak.add_reference(chunk.src, chunk.tgt)
    return leak


def _chunks(train: Path, chunk_lines: int) -> list[Chunk]:
    return list(ParallelFiles.from_prefixes(train, "en", "de", ReadOptions(chunk_lines=chunk_lines)).chunks())


_worker: Cleaner | None = None


def _init(config: CleanConfig, leakage: LeakageFilter, size: int) -> None:
    global _worker
    _worker = Cleaner(config, leakage, sample_size=size)


def _local(chunk: Chunk) -> tuple[Chunk, np.ndarray, DropSample]:
    """What a prepare worker does per chunk: a fresh sample, the local half, the sample back."""
    assert _worker is not None
    _worker.dropped = _worker.new_drop_sample()
    cleaned, keys = _worker.local(chunk)
    return cleaned, keys, _worker.dropped


def _clean(train: Path, test: Path, chunk_lines: int, workers: int, size: int = 3) -> tuple[DropSample, Cleaner]:
    """Clean the corpus with 1 worker (in-process) or 2 worker processes; the parent dedups in order."""
    leak = _leakage(test)
    parent = Cleaner(CONFIG, leak, sample_size=size)
    chunks = _chunks(train, chunk_lines)
    if workers == 1:
        for chunk in chunks:
            parent(chunk)
        return parent.dropped, parent
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    with ProcessPoolExecutor(workers, mp_context=context, initializer=_init, initargs=(CONFIG, leak, size)) as pool:
        for cleaned, keys, sample in pool.map(_local, chunks):
            parent.dropped.merge(sample)
            parent.dedup(cleaned, keys)
    return parent.dropped, parent


@pytest.mark.parametrize("workers", [1, 2])
def test_same_sample_for_any_chunking_and_workers(tmp_path: Path, workers: int) -> None:
    train, test = _corpus(tmp_path)
    reference, _ = _clean(train, test, 100, 1)
    assert set(reference.reasons) == {"empty", "tokens", "ratio", "identical", "nonletter", "leakage", "dedup"}
    for chunk_lines in (3, 7, 100):
        sample, _ = _clean(train, test, chunk_lines, workers)
        assert sample.to_dict() == reference.to_dict(), (chunk_lines, workers)


def test_sample_is_the_smallest_hashes_of_every_drop(tmp_path: Path) -> None:
    """With room for everything, the sample lists every dropped line under the step that counted it;
    with room for k, it is the k lines of smallest hash among those."""
    train, test = _corpus(tmp_path)
    everything, cleaner = _clean(train, test, 7, 1, size=10**6)
    stats = cleaner.stats
    counted = {step: stats["filter"][f"dropped_{step}"] for step in cleaner.filter.steps}
    counted.update(leakage=stats["leakage"]["leaked"], dedup=stats["dedup"]["duplicates"])
    assert {r: len(everything.get(r)) for r in everything.reasons} == {r: n for r, n in counted.items() if n}
    src = (tmp_path / "train.en").read_text(encoding="utf-8").split("\n")
    for record in everything.get("tokens"):
        assert len(src[record["line"] - 1].split()) > 6 and record["src"] == src[record["line"] - 1]
    for record in everything.get("dedup"):
        assert (record["src"], record["tgt"]) == ("repeated pair", "wiederholtes paar")
    small, _ = _clean(train, test, 7, 1, size=3)
    for reason in everything.reasons:
        lines = np.array([r["line"] for r in everything.get(reason)])
        want = sorted(lines[np.argsort(line_keys(lines))[:3]].tolist())
        assert [r["line"] for r in small.get(reason)] == want


def test_merge_is_order_free_and_json_round_trips(tmp_path: Path) -> None:
    src = [f"s{i}" for i in range(50)]
    tgt = [f"t{i}" for i in range(50)]
    parts = [DropSample(4) for _ in range(3)]
    for i, part in enumerate(parts):
        where = np.arange(i, 50, 3)
        part.add("ratio", where + 1, src, tgt, where)
    one = DropSample(4).merge(parts[0]).merge(parts[1]).merge(parts[2])
    other = DropSample(4).merge(parts[2]).merge(parts[0]).merge(parts[1])
    whole = DropSample(4)
    whole.add("ratio", np.arange(50) + 1, src, tgt)
    assert one.to_dict() == other.to_dict() == whole.to_dict()
    assert len(one.get("ratio")) == 4 and len(one) == 4
    again = DropSample.from_dict(json.loads(one.to_json()), size=4)
    assert again.to_dict() == one.to_dict()
    again.add("ratio", np.arange(50) + 1, src, tgt)  # re-offering the same lines changes nothing
    assert again.to_dict() == one.to_dict()
    path = tmp_path / ".work" / "dropped" / "train.json"
    one.write(path)
    assert json.loads(path.read_text(encoding="utf-8")) == one.to_dict()


def test_monolingual_long_texts_and_disabled_sampling() -> None:
    long = "x" * (MAX_CHARS + 50)
    chunk = Chunk(10, 4, ["", long, "ok", "ok"])
    cleaner = Cleaner(CleanConfig(filters=FilterConfig(max_chars=100)))
    cleaner(chunk)
    assert cleaner.dropped.get("empty") == [{"line": 11, "src": "", "tgt": None}]
    [record] = cleaner.dropped.get("chars")
    assert record["line"] == 12 and len(record["src"]) == MAX_CHARS and record["src"].endswith("…")
    assert cleaner.dropped.get("dedup") == [{"line": 14, "src": "ok", "tgt": None}]
    off = Cleaner(CleanConfig(filters=FilterConfig(max_chars=100)), sample_size=0)
    out = off(Chunk(0, 4, ["", long, "ok", "ok"]))
    assert out.src == ["ok"] and len(off.dropped) == 0


def test_bad_records_are_refused() -> None:
    from tokenmill.errors import FormatError

    with pytest.raises(FormatError):
        DropSample.from_dict({"ratio": [{"line": "1", "src": "a", "tgt": "b"}]})
    with pytest.raises(ValueError):
        DropSample(2).merge(DropSample(2, seed=5))
