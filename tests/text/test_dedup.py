"""Hash set, first-occurrence-wins dedup, and held-out leakage removal."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenmill.errors import ConfigError
from tokenmill.text.dedup import (
    Deduplicator,
    HashSet,
    LeakageFilter,
    first_occurrences,
    pair_hashes,
    side_hashes,
)
from tokenmill.text.stats import StepStats


def first_seen(keys: list[int]) -> list[bool]:
    """The plain reference: True where a key occurs for the first time in the stream."""
    seen: set[int] = set()
    out = []
    for key in keys:
        out.append(key not in seen)
        seen.add(key)
    return out


_INVERSE = pow(0x9E3779B97F4A7C15, -1, 1 << 64)


def keys_homed_at(slot: int, bits: int, count: int) -> list[int]:
    """``count`` distinct keys whose home slot in a table of ``2**bits`` slots is ``slot`` (inverting the
    Fibonacci hash), to pile a cluster where the test wants it."""
    return [((slot << (64 - bits)) + i + 1) * _INVERSE % (1 << 64) for i in range(count)]


def test_pair_key_has_no_separator_ambiguity() -> None:
    keys = pair_hashes(["a\tb", "a", "ab", "a"], ["c", "b\tc", "c", "bc"])
    assert len(set(keys.tolist())) == 4
    assert pair_hashes(["x"], ["y"])[0] == pair_hashes(["x"], ["y"], side_hashes(["x"]))[0]


def test_first_occurrence_wins_across_and_within_chunks() -> None:
    src = ["a", "b", "a", "c", "b", "a"]
    tgt = ["1", "2", "1", "3", "9", "1"]
    dedup = Deduplicator()
    stats = StepStats("dedup")
    keep = np.concatenate([dedup(src[:2], tgt[:2], stats), dedup(src[2:], tgt[2:], stats)])
    assert keep.tolist() == [True, True, False, True, True, False]  # ("b","9") differs from ("b","2")
    assert stats.counts == {"pairs": 6, "duplicates": 2}


def test_monolingual_dedup() -> None:
    assert Deduplicator()(["x", "y", "x"]).tolist() == [True, True, False]


@settings(max_examples=60, deadline=None)
@given(
    keys=st.lists(st.integers(0, 40) | st.integers(0, 2**64 - 1), max_size=300),
    cut=st.integers(1, 50),
    capacity=st.integers(1, 64),
)
def test_property_hashset_matches_python_set(keys, cut, capacity) -> None:
    table, given = HashSet(capacity), HashSet(capacity)  # given: the first occurrences a worker found
    seen = set(keys)
    arr = np.array(keys, dtype=np.uint64)
    chunks = [arr[i : i + cut] for i in range(0, len(arr), cut)]
    got = [table.add(chunk) for chunk in chunks]
    assert (np.concatenate(got).tolist() if got else []) == first_seen(keys)
    got = [given.add(chunk, first_occurrences(chunk)) for chunk in chunks]
    assert (np.concatenate(got).tolist() if got else []) == first_seen(keys)
    assert len(table) == len(given) == len(seen)
    probe = np.array([*keys[:10], 12345678901234567, 0], dtype=np.uint64)
    assert table.contains(probe).tolist() == [int(k) in seen for k in probe.tolist()]


def test_hashset_memory_is_a_numpy_table() -> None:
    table = HashSet(1000)
    table.add(np.arange(1, 100_001, dtype=np.uint64))
    assert len(table) == 100_000
    assert table.nbytes <= 16 * 2 * 100_000  # <= 0.5 load, 8 bytes a slot, at most one doubling ahead


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("pair", [False, True, True, True]),
        ("source", [False, False, True, True]),
        ("target", [False, True, False, True]),
        ("either", [False, False, False, True]),
    ],
)
def test_leakage_modes(mode: str, expected: list[bool]) -> None:
    leak = LeakageFilter(mode)  # type: ignore[arg-type]
    leak.add_reference_chunks([(["valid src", "test src"], ["valid tgt", "test tgt"])])
    train_src = ["valid src", "test src", "new src", "fresh"]
    train_tgt = ["valid tgt", "other", "test tgt", "fresh tgt"]
    stats = StepStats("leakage")
    assert leak(train_src, train_tgt, stats).tolist() == expected
    assert stats["leaked"] == expected.count(False)


@pytest.mark.parametrize("mode", ["pair", "source", "target", "either"])
def test_leakage_with_the_callers_hashes_equals_hashing_itself(mode: str) -> None:
    leak = LeakageFilter(mode)  # type: ignore[arg-type]
    leak.add_reference_chunks([(["valid src", "test src"], ["valid tgt", "test tgt"])])
    src, tgt = ["valid src", "test src", "new src", "fresh"], ["valid tgt", "other", "test tgt", "fresh tgt"]
    side = side_hashes(src)
    for keys in ((side, pair_hashes(src, tgt)), (side, None)):
        assert leak(src, tgt, keys=keys).tolist() == leak(src, tgt).tolist()
    assert leak(src, None, keys=(side, None)).tolist() == leak(src, None).tolist()


def test_leakage_without_references_keeps_everything_and_counts_zero() -> None:
    leak = LeakageFilter("pair")
    assert leak.empty
    stats = StepStats("leakage")
    assert leak(["a", "b"], ["c", "d"], stats).tolist() == [True, True]
    assert stats.counts == {"leaked": 0}
    leak.add_reference(["a"], ["c"])
    assert not leak.empty and leak(["a", "b"], ["c", "d"]).tolist() == [False, True]


def test_hashes_of_lines_with_a_lone_surrogate_are_those_of_their_surrogatepass_bytes() -> None:
    import xxhash

    lines = ["plain", "bad \udcff byte", "中文"]
    expected = [xxhash.xxh3_64_intdigest(x.encode("utf-8", "surrogatepass")) for x in lines]
    assert side_hashes(lines).tolist() == expected
    assert side_hashes(lines[::2]).tolist() == expected[::2]  # the fast path: no surrogate in the chunk
    targets = [t.encode("utf-8", "surrogatepass") for t in lines[::-1]]
    seeded = [xxhash.xxh3_64_intdigest(t, s) for s, t in zip(expected, targets, strict=True)]
    assert pair_hashes(lines, lines[::-1]).tolist() == seeded


def test_leakage_bad_mode() -> None:
    with pytest.raises(ConfigError, match="leakage mode"):
        LeakageFilter("both")  # type: ignore[arg-type]


@settings(max_examples=80, deadline=None)
@given(keys=st.lists(st.integers(0, 12) | st.integers(0, 2**64 - 1), max_size=200))
def test_first_occurrences_are_the_first_position_of_each_key(keys) -> None:
    arr = np.array(keys, dtype=np.uint64)
    firsts = first_occurrences(arr)
    assert firsts.dtype == np.int64
    assert sorted(firsts.tolist()) == [i for i, new in enumerate(first_seen(keys)) if new]


@pytest.mark.parametrize("where", ["end", "start", "middle"])
def test_a_cluster_at_the_tables_end_wraps_round_when_the_table_grows(where: str) -> None:
    """Growing rehashes the keys in home-slot order without probing; a cluster that runs past the last
    slot goes on at slot 0 (the probing path). Keys piled on one home slot of the grown table check both."""
    bits = 8  # HashSet(64) has 2**7 slots; 65 keys make it grow to 2**8
    slot = {"end": (1 << bits) - 3, "start": 0, "middle": 100}[where]
    pile = keys_homed_at(slot, bits, 40)
    spread = keys_homed_at(5, bits, 10) + keys_homed_at((1 << bits) - 1, bits, 10)
    stream = pile[:20] + spread + pile + spread[::3] + [0, 0, pile[7]]
    table = HashSet(64)
    got = [table.add(np.array(stream[i : i + 9], dtype=np.uint64)) for i in range(0, len(stream), 9)]
    assert np.concatenate(got).tolist() == first_seen(stream)
    assert table.nbytes == 8 << bits
    assert table.contains(np.array(stream, dtype=np.uint64)).all()
    absent = keys_homed_at(slot, bits, 45)[40:] + keys_homed_at(3, bits, 2)
    assert not table.contains(np.array(absent, dtype=np.uint64)).any()


def test_reserve_sizes_the_table_once_and_changes_no_answer() -> None:
    rng = np.random.default_rng(3)
    keys = rng.integers(0, 50_000, 120_000).astype(np.uint64)  # duplicates within and across chunks, and zeros
    grown, sized = Deduplicator(capacity=1 << 10), Deduplicator(capacity=1 << 10)
    sized.reserve(len(keys))
    size = sized.seen.nbytes
    stats = [StepStats("dedup"), StepStats("dedup")]
    masks = [[d.keep_first(keys[i : i + 7000], s) for i in range(0, len(keys), 7000)]
             for d, s in zip((grown, sized), stats, strict=True)]
    assert np.concatenate(masks[0]).tolist() == np.concatenate(masks[1]).tolist() == first_seen(keys.tolist())
    assert stats[0].counts == stats[1].counts
    assert sized.seen.nbytes == size  # never grew
    assert grown.seen.nbytes < size  # grew by doubling to what the keys need
