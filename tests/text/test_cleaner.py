"""Cleaner: normalize -> filter -> leakage -> dedup on chunks read from real files."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tokenmill.text import (
    CleanConfig,
    Cleaner,
    FilterConfig,
    LeakageFilter,
    Normalizer,
    ParallelFiles,
    ReadOptions,
    merge_all,
)
from tokenmill.text.cleaner import RESERVE_ITEMS
from tokenmill.text.dedup import first_occurrences
from tokenmill.text.line_block import LineBlock
from tokenmill.text.readers import Chunk


def test_cleaner_end_to_end(tmp_path: Path) -> None:
    (tmp_path / "train.en").write_text("Ｈｅｌｌｏ  world\nhello world\n\nsame\ntest sentence\nHello world\n")
    (tmp_path / "train.zh").write_text("你好\u3000世界\n你好 世界\nx\nsame\n测试\n你好 世界\n")
    (tmp_path / "test.en").write_text("test sentence\n")
    (tmp_path / "test.zh").write_text("测试\n")
    leak = LeakageFilter("pair")
    for c in ParallelFiles.from_prefixes(tmp_path / "test", "en", "zh").chunks():
        leak.add_reference(c.src, c.tgt)
    config = CleanConfig(Normalizer(fullwidth=True), FilterConfig(drop_identical=True))
    source = ParallelFiles.from_prefixes(tmp_path / "train", "en", "zh", ReadOptions(chunk_lines=2))
    out_src: list[str] = []
    out_tgt: list[str] = []
    # two "workers" run the local half on alternate chunks; dedup runs in input order
    workers = [Cleaner(config, leak), Cleaner(config, leak)]
    merger = Cleaner(config)
    for i, chunk in enumerate(source.chunks()):
        local, keys = workers[i % 2].local(chunk)
        done = merger.dedup(local, keys)
        out_src += done.src
        out_tgt += done.tgt
    assert out_src == ["Hello world", "hello world"]
    assert out_tgt == ["你好 世界", "你好 世界"]
    stats = merge_all([*workers[0].stats.values(), *workers[1].stats.values(), merger.stats["dedup"]])
    assert stats["filter"]["dropped_empty"] == 1 and stats["filter"]["dropped_identical"] == 1
    assert stats["leakage"]["leaked"] == 1
    assert stats["dedup"]["duplicates"] == 1
    assert stats["normalize"]["changed"] == 2


def test_dedup_keys_are_the_kept_items_hashes_with_or_without_a_leakage_filter(tmp_path: Path) -> None:
    from tokenmill.text import pair_hashes, side_hashes
    from tokenmill.text.readers import Chunk

    src = ["a b", "held out", "c", "held out", "", "d  e"]
    tgt = ["x", "held tgt", "y", "other", "z", "w"]
    for mode in ("pair", "source", "target", "either", None):
        leak = None
        if mode is not None:
            leak = LeakageFilter(mode)  # type: ignore[arg-type]
            leak.add_reference(["held out"], ["held tgt"])
        for pairs in (True, False):
            chunk = Chunk(0, len(src), list(src), list(tgt) if pairs else None)
            local, keys = Cleaner(CleanConfig(), leak).local(chunk)
            expected = pair_hashes(local.src, local.tgt) if pairs else side_hashes(local.src)
            assert keys is not None and keys.tolist() == expected.tolist(), (mode, pairs)
            kept = [i for i in range(len(src)) if src[i]]  # the filter drops the pair with an empty side
            k_src, k_tgt = [src[i] for i in kept], [tgt[i] for i in kept] if pairs else None
            leaked = 0 if leak is None else int((~leak(k_src, k_tgt)).sum())  # the filter asked by itself
            assert len(local.src) == len(kept) - leaked, (mode, pairs)


def test_dedup_with_the_workers_first_occurrences_and_a_sized_table_equals_the_plain_dedup() -> None:
    """What a worker may find for its own range (first_occurrences, LineBlocks) and a table sized once change
    no kept item, counter or drop sample, for pairs and lines, duplicates within and across chunks."""
    rng = np.random.default_rng(5)
    src = [f"s{int(i)}" for i in rng.integers(0, 300, 2000)]
    tgt = [f"t{int(i)}" for i in rng.integers(0, 3, 2000)]
    for pairs in (True, False):
        plain, fast = Cleaner(CleanConfig(), sample_size=5), Cleaner(CleanConfig(), sample_size=5)
        fast.reserve(len(src))
        seen: set[tuple[str, str | None]] = set()
        for start in range(0, len(src), 170):
            chunk = Chunk(start, 170, src[start : start + 170], tgt[start : start + 170] if pairs else None)
            local, keys = plain.local(chunk)
            assert keys is not None and local.numbers is not None
            want = []
            for pair in zip(local.src, local.tgt or [None] * len(local), strict=True):
                want.append(pair not in seen)
                seen.add(pair)
            blocks = LineBlock.from_lines(local.src, False), None if local.tgt is None else LineBlock.from_lines(
                local.tgt, False)
            keep = plain.dedup_keep(keys, local.numbers, local.src, local.tgt)
            quick = fast.dedup_keep(keys, local.numbers, *blocks, first_occurrences(keys))
            assert (None if all(want) else want) == (None if keep is None else keep.tolist())
            assert (None if quick is None else quick.tolist()) == (None if keep is None else keep.tolist())
        assert plain.stats["dedup"].counts == fast.stats["dedup"].counts
        assert plain.stats["dedup"]["duplicates"] > 0
        assert plain.dropped.to_dict() == fast.dropped.to_dict() and len(plain.dropped) == 5
    off = Cleaner(CleanConfig(dedup=False))
    off.reserve(10)
    assert off.dedup_keep(np.zeros(3, dtype=np.uint64), None, ["a"] * 3, None) is None


def test_reserve_is_capped_for_large_inputs() -> None:
    """A split's line count is only an upper bound on the keys (duplicates and filtered lines never reach the
    table): a large input does not get a table sized for all its lines up front (it grows as it fills)."""
    cleaner = Cleaner(CleanConfig())
    assert cleaner.deduplicator is not None
    cleaner.reserve(1 << 28)  # uncapped: a 4 GiB table (2^29 slots) allocated before a single key is seen
    assert cleaner.deduplicator.seen.nbytes == 8 * 2 * RESERVE_ITEMS  # 2 slots per item (load 0.5), 8 bytes each
