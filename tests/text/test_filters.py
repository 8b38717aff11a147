"""Pair filters: every step, the fixed order, per-step counts, precomputed token lengths."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenmill.errors import ConfigError
from tokenmill.text.filters import FILTER_STEPS, FilterConfig, PairFilter, whitespace_token_lengths
from tokenmill.text.stats import StepStats


def run(config: FilterConfig, src, tgt=None, **kw):
    return PairFilter(config)(src, tgt, **kw)


def test_default_drops_only_empty_sides() -> None:
    result = run(FilterConfig(), ["a", "", "c", "d"], ["x", "y", "", "w"])
    assert result.keep.tolist() == [True, False, False, True]
    assert result.counts == {"empty": 2}
    assert result.apply(["a", "", "c", "d"]) == ["a", "d"]


def test_char_and_token_limits_apply_to_both_sides() -> None:
    src = ["ab", "abcdef", "one two three", "a b", "ok"]
    tgt = ["xy", "xy", "uno", "a b c d", "fine"]
    result = run(FilterConfig(min_chars=2, max_chars=5, max_tokens=3), src, tgt)
    assert result.keep.tolist() == [True, False, False, False, True]
    assert result.counts == {"empty": 0, "chars": 3, "tokens": 0}


def test_token_filter_uses_precomputed_lengths() -> None:
    src, tgt = ["a", "b", "c"], ["x", "y", "z"]
    result = run(FilterConfig(max_tokens=4), src, tgt, src_tokens=np.array([1, 5, 2]), tgt_tokens=np.array([4, 1, 9]))
    assert result.keep.tolist() == [True, False, False]
    with pytest.raises(ValueError, match="1-D integer array of 3"):
        run(FilterConfig(max_tokens=4), src, tgt, src_tokens=np.array([1.0, 2.0, 3.0]))


def test_ratio_in_tokens_and_chars() -> None:
    src = ["a b c d e f g h i j", "a b", "aaaaaaaaaa"]
    tgt = ["x", "x y", "b"]
    assert run(FilterConfig(max_ratio=3), src, tgt).keep.tolist() == [False, True, True]
    assert run(FilterConfig(max_ratio=3, ratio_unit="chars"), src, tgt).keep.tolist() == [False, True, False]


def test_identical_and_nonletter() -> None:
    src = ["same", "Hello there", "12345 !!!", "हिन्दी पाठ"]
    tgt = ["same", "Bonjour", "words", "text"]
    result = run(FilterConfig(drop_identical=True, max_nonletter=0.5), src, tgt)
    assert result.keep.tolist() == [False, True, False, True]  # vowel signs (marks) count as letters
    assert result.counts["identical"] == 1 and result.counts["nonletter"] == 1


def test_script_filter() -> None:
    pytest.importorskip("regex")
    src = ["Hello world", "Привет мир", "Hello 世界"]
    tgt = ["你好世界", "你好", "hello"]
    result = run(FilterConfig(src_script="Latin", tgt_script="Han"), src, tgt)
    assert result.keep.tolist() == [True, False, False]
    with pytest.raises(ConfigError, match="unknown script"):
        PairFilter(FilterConfig(src_script="Klingon"))


def test_a_pair_is_counted_once_at_the_first_failing_step() -> None:
    # empty source AND identical: counted under "empty" only, the earlier step
    src, tgt = ["", "x", "same same same same"], ["", "y", "same same same same"]
    stats = StepStats("filter")
    result = PairFilter(FilterConfig(max_tokens=3, drop_identical=True))(src, tgt, stats=stats)
    assert result.counts == {"empty": 1, "tokens": 1, "identical": 0}
    assert stats.counts == {
        "pairs": 3,
        "dropped_empty": 1,
        "dropped_tokens": 1,
        "dropped_identical": 0,
        "kept": 1,
    }


def test_monolingual_runs_one_sided_steps() -> None:
    result = run(FilterConfig(max_chars=3, max_ratio=2, drop_identical=True), ["abc", "", "abcd"])
    assert result.keep.tolist() == [True, False, False]


def test_bad_settings_are_config_errors() -> None:
    for kwargs, msg in [
        ({"max_chars": 1, "min_chars": 2}, "below min_chars"),
        ({"max_ratio": 0.5}, "must be >= 1"),
        ({"max_nonletter": 2.0}, r"fraction in \[0, 1\]"),
        ({"src_lang": "en", "langid_candidates": ("de",)}, "not among langid_candidates"),
    ]:
        with pytest.raises(ConfigError, match=msg):
            FilterConfig(**kwargs)


def test_steps_listed_in_fixed_order() -> None:
    f = PairFilter(FilterConfig(drop_identical=True, max_ratio=2, min_chars=1, max_nonletter=0.9))
    assert f.steps == ("empty", "chars", "ratio", "identical", "nonletter")
    assert list(f.steps) == [s for s in FILTER_STEPS if s in f.steps]


words = st.lists(st.sampled_from(["a", "bb", "ccc", "日本", "1", "!"]), max_size=8).map(" ".join)


@settings(max_examples=100, deadline=None)
@given(pairs=st.lists(st.tuples(words, words), max_size=30), max_tokens=st.integers(0, 6), ratio=st.floats(1, 4))
def test_property_mask_matches_per_pair_rules(pairs, max_tokens, ratio) -> None:
    src = [s for s, _ in pairs]
    tgt = [t for _, t in pairs]
    result = run(FilterConfig(max_tokens=max_tokens, max_ratio=ratio), src, tgt)
    expected = []
    for s, t in pairs:
        a, b = len(s.split()), len(t.split())
        ok = bool(s) and bool(t) and a <= max_tokens and b <= max_tokens
        ok = ok and max(a, b) <= ratio * max(min(a, b), 1)
        expected.append(ok)
    assert result.keep.tolist() == expected
    assert sum(result.counts.values()) == len(pairs) - sum(expected)
    assert whitespace_token_lengths(src).tolist() == [len(s.split()) for s in src]
    assert whitespace_token_lengths(src, collapsed=True).tolist() == [len(s.split()) for s in src]
