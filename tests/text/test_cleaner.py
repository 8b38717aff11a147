"""Cleaner: normalize -> filter -> leakage -> dedup on chunks read from real files."""

from __future__ import annotations

from pathlib import Path

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
