"""Pair filters over chunks: a keep mask plus how many pairs each step dropped.

Steps, each optional, run in this fixed order (cheap first); a pair dropped by one step is counted
there and not looked at by later ones, so the per-step counts add up to the pairs dropped:

1. ``empty``      either side empty (after normalization, so whitespace-only lines are empty).
2. ``chars``      a side shorter than ``min_chars`` or longer than ``max_chars`` characters.
3. ``tokens``     a side with fewer than ``min_tokens`` or more than ``max_tokens`` tokens:
                  whitespace tokens by default, or lengths you pass (e.g. subword counts).
4. ``ratio``      longer side / shorter side above ``max_ratio`` (in tokens, or characters with
                  ``ratio_unit="chars"``; a zero length counts as 1).
5. ``identical``  source equal to target.
6. ``nonletter``  a side whose share of non-letter characters (whitespace ignored; letters are
                  Unicode L* and M*) is above ``max_nonletter``.
7. ``script``     a side whose letters are less than ``min_script_fraction`` in the expected
                  script (``src_script``/``tgt_script``; lines without letters pass).
8. the bitext rules that are switched on (see :mod:`tokenmill.text.filters.registry`: bicleaner-hardrules'
   model-free rules and OpusFilter's numeral, punctuation, HTML, repetition and common-substring filters),
   in :data:`~tokenmill.text.filters.registry.RULE_ORDER`, each counted under its own name.
9. ``langid``     a side whose language is not ``src_lang``/``tgt_lang`` (``en``, ``eng`` or ``eng_Latn``), as
                  ``lid_backend`` identifies it (:mod:`tokenmill.text.lid`: heliport by default, or
                  py3langid), or whose confidence is under ``lid_threshold``; with ``stats``, the labels
                  it saw are counted as ``lid_src_<label>``/``lid_tgt_<label>`` (the report's language mix).

Monolingual chunks (``tgt=None``) run the one-sided steps on the source only. Every step works on
whole chunks: lengths via ``map(len, ...)`` into numpy, masks combined with numpy; the character
and language steps only look at pairs that survived the earlier steps.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import compress, repeat

import numpy as np

from tokenmill.errors import ConfigError
from tokenmill.text.charclass import nonletter_fraction, script_fraction, script_table
from tokenmill.text.filters import (  # noqa: F401 (they register)
    rules_gopher,
    rules_length,
    rules_noise,
    rules_opus,
    rules_pairs,
    rules_script,
    rules_web,
)
from tokenmill.text.filters.chunk import ChunkText, Side
from tokenmill.text.filters.registry import RULES, base_lang, regex_module
from tokenmill.text.filters.settings import (
    BASE_STEPS,
    FILTER_STEPS,
    FilterConfig,
    piece_filters,
    with_rule_langs,
    without_piece_filters,
)
from tokenmill.text.lid import (
    LanguageCheck,
    label_counts,
    mix_counter,
)
from tokenmill.text.stats import StepStats


@dataclass
class FilterResult:
    """``keep[i]`` is True for pairs that pass every step; ``counts[step]`` = pairs dropped there."""

    keep: np.ndarray  # bool, one per input pair
    counts: dict[str, int] = field(default_factory=dict)
    dropped: dict[str, np.ndarray] = field(default_factory=dict)  # step -> positions it dropped (steps that dropped)

    @property
    def kept(self) -> int:
        return int(self.keep.sum())

    def apply(self, lines: Sequence[str]) -> list[str]:
        """The kept items of ``lines`` (same length as the filtered chunk), in order."""
        return list(compress(lines, self.keep.tolist()))


def char_lengths(lines: Sequence[str]) -> np.ndarray:
    """int64 characters per line."""
    return np.fromiter(map(len, lines), dtype=np.int64, count=len(lines))


def whitespace_token_lengths(lines: Sequence[str], collapsed: bool = False) -> np.ndarray:
    """int64 whitespace-separated tokens per line (``len(line.split())``).

    ``collapsed=True`` promises single spaces and no space at either end (what
    ``Normalizer(collapse_whitespace=True)`` produces): then tokens = spaces + 1, counted faster.
    """
    if not collapsed:
        return np.fromiter(map(len, map(str.split, lines)), dtype=np.int64, count=len(lines))
    spaces = np.fromiter(map(str.count, lines, repeat(" ")), dtype=np.int64, count=len(lines))
    return spaces + np.fromiter(map(bool, lines), dtype=np.int64, count=len(lines))


class _Lengths:
    """Characters and tokens per line of each side, counted on first use (once per chunk)."""

    def __init__(self, sides: list[Sequence[str]], given: list[np.ndarray | None], collapsed: bool) -> None:
        self._sides, self._given, self._collapsed = sides, given, collapsed
        self._picked: tuple[int, list[Side]] = (-1, [])

    def picked(self, keep: np.ndarray, kept: int) -> list[Side]:
        """The sides' items still kept (``kept`` of them), each carrying the whole chunk's shared
        intermediates: built once per state of ``keep``; ``keep`` only loses items, so the count tells
        whether it changed."""
        if self._picked[0] != kept:
            rows = np.flatnonzero(keep)
            self._picked = (kept, [Side(chunk, rows) for chunk in self.texts])
        return self._picked[1]

    @functools.cached_property
    def texts(self) -> list[ChunkText]:
        """Each side's lines as one text (code points, class counts ...), shared by the rules."""
        return [ChunkText(side) for side in self._sides]

    @functools.cached_property
    def chars(self) -> list[np.ndarray]:
        return [char_lengths(side) for side in self._sides]

    @functools.cached_property
    def tokens(self) -> list[np.ndarray]:
        n = len(self._sides[0])
        return [whitespace_token_lengths(side, self._collapsed) if given is None else _checked_lengths(given, n)
                for side, given in zip(self._sides, self._given, strict=True)]


class PairFilter:
    """Compiled filters for one :class:`FilterConfig`; call it on chunks."""

    def __init__(self, config: FilterConfig | None = None) -> None:
        self.config = config or FilterConfig()
        cfg = self.config
        for script in (cfg.src_script, cfg.tgt_script):
            if script is not None:
                script_table(script)  # fail now on an unknown script or a missing package
        if cfg.rules:
            try:
                regex_module()
            except ModuleNotFoundError as error:
                raise ConfigError(f"filter settings: {error}") from None
        self._langs = (base_lang(cfg.rule_src_lang), base_lang(cfg.rule_tgt_lang))
        self._langid = None
        if cfg.src_lang is not None or cfg.tgt_lang is not None:
            self._langid = LanguageCheck(cfg.lid_backend, (cfg.src_lang, cfg.tgt_lang),
                                         candidates=cfg.langid_candidates, threshold=cfg.lid_threshold,
                                         min_script_fraction=cfg.min_script_fraction)

    @property
    def steps(self) -> tuple[str, ...]:
        """The enabled steps, in the order they run."""
        cfg = self.config
        on = {
            "empty": cfg.drop_empty,
            "chars": cfg.min_chars > 0 or cfg.max_chars is not None,
            "tokens": cfg.min_tokens > 0 or cfg.max_tokens is not None,
            "ratio": cfg.max_ratio is not None,
            "identical": cfg.drop_identical,
            "nonletter": cfg.max_nonletter is not None,
            "script": cfg.src_script is not None or cfg.tgt_script is not None,
            "langid": self._langid is not None,
            **dict.fromkeys(cfg.rules, True),
        }
        return tuple(s for s in FILTER_STEPS if on.get(s))

    def __call__(
        self,
        src: Sequence[str],
        tgt: Sequence[str] | None = None,
        *,
        src_tokens: np.ndarray | None = None,
        tgt_tokens: np.ndarray | None = None,
        stats: StepStats | None = None,
        collapsed: bool = False,
    ) -> FilterResult:
        """Filter one chunk. ``src_tokens``/``tgt_tokens``: token lengths to use instead of whitespace
        tokens (e.g. subword counts from the tokenizer). ``collapsed``: the text went through
        whitespace collapsing (faster token counts). With ``stats``, adds ``pairs``, ``kept`` and
        ``dropped_<step>`` counters."""
        n = len(src)
        if tgt is not None and len(tgt) != n:
            raise ValueError(f"source has {n} items but target has {len(tgt)}")
        sides = [src] if tgt is None else [src, tgt]
        keep = np.ones(n, dtype=bool)
        counts: dict[str, int] = {}
        dropped: dict[str, np.ndarray] = {}
        lengths = _Lengths(sides, [src_tokens, tgt_tokens][: len(sides)], collapsed)
        for step in self.steps:
            bad = self._language(sides, keep, stats) if step == "langid" else self._bad(step, sides, keep, lengths)
            hit = keep if bad is None else bad & keep
            counts[step] = 0 if bad is None else int(hit.sum())
            if counts[step]:
                dropped[step] = np.flatnonzero(hit)
                keep[hit] = False
        result = FilterResult(keep, counts, dropped)
        if stats is not None:
            stats.add("pairs", n)
            for step in self.steps:
                stats.add(f"dropped_{step}", counts[step])
            stats.add("kept", result.kept)
        return result

    def _bad(self, step: str, sides: list[Sequence[str]], keep: np.ndarray, lengths: _Lengths) -> np.ndarray | None:
        """The bad mask of one step over the chunk (None: the step does not apply to this chunk)."""
        cfg, paired = self.config, len(sides) == 2
        if step == "empty":
            return np.logical_or.reduce([c == 0 for c in lengths.chars])
        if step == "chars":
            return np.logical_or.reduce([_outside(c, cfg.min_chars, cfg.max_chars) for c in lengths.chars])
        if step == "tokens":
            return np.logical_or.reduce([_outside(t, cfg.min_tokens, cfg.max_tokens) for t in lengths.tokens])
        if step in ("ratio", "identical") and not paired:
            return None
        if step == "ratio":
            a, b = lengths.chars if cfg.ratio_unit == "chars" else lengths.tokens
            return np.maximum(a, b) > cfg.max_ratio * np.maximum(np.minimum(a, b), 1)  # type: ignore[operator]
        if step == "identical":
            return np.fromiter(map(str.__eq__, *sides), dtype=bool, count=len(keep))
        if step in ("nonletter", "script"):
            return self._costly(step, sides, keep)
        rule = RULES[step]
        runs = rule.per_side and not (paired and rule.documents) if rule.per_side else paired
        return self._rule(step, keep, lengths) if runs else None

    def _rule(self, name: str, keep: np.ndarray, lengths: _Lengths) -> np.ndarray:
        """Bad mask of a bitext rule, computed on the pairs still kept only."""
        rule = RULES[name]
        value = {option: getattr(self.config, option) for option in rule.options} if rule.options else getattr(
            self.config, name)
        idx = np.flatnonzero(keep)
        bad = np.zeros(len(keep), dtype=bool)
        if not len(idx):
            return bad
        picked = lengths.picked(keep, len(idx))
        if rule.per_side:
            for lines, lang in zip(picked, self._langs, strict=False):
                bad[idx] |= rule.test(lines, value, lang)
        else:
            bad[idx] = rule.test(picked[0], picked[1], value, self._langs)
        return bad

    def _costly(self, step: str, sides: list[Sequence[str]], keep: np.ndarray) -> np.ndarray:
        """Bad mask for a step that inspects characters: computed on the surviving pairs only."""
        cfg = self.config
        idx = np.flatnonzero(keep)
        bad = np.zeros(len(keep), dtype=bool)
        if not len(idx):
            return bad
        survivors = keep.tolist()
        for i, side in enumerate(sides):
            lines = list(compress(side, survivors)) if len(idx) < len(keep) else list(side)
            if step == "nonletter":
                bad[idx] |= nonletter_fraction(lines) > cfg.max_nonletter  # type: ignore[operator]
            elif step == "script":
                script = (cfg.src_script, cfg.tgt_script)[i]
                if script is not None:
                    bad[idx] |= script_fraction(lines, script) < cfg.min_script_fraction
        return bad

    def _language(self, sides: list[Sequence[str]], keep: np.ndarray, stats: StepStats | None) -> np.ndarray:
        """Bad mask of the ``langid`` step on the surviving pairs; the labels seen counted into ``stats``."""
        assert self._langid is not None
        idx = np.flatnonzero(keep)
        bad = np.zeros(len(keep), dtype=bool)
        if not len(idx):
            return bad
        survivors = keep.tolist()
        for side, (lines, name) in enumerate(zip(sides, ("src", "tgt"), strict=False)):
            if self._langid.wanted[side] is None:
                continue
            picked = list(compress(lines, survivors)) if len(idx) < len(keep) else list(lines)
            wrong, labels = self._langid.mismatch(picked, side)
            bad[idx] |= wrong
            if stats is not None:
                for label, count in label_counts(labels):
                    stats.add(mix_counter(name, label), count)
        return bad


def _outside(lengths: np.ndarray, low: int, high: int | None) -> np.ndarray:
    out = lengths < low
    if high is not None:
        out |= lengths > high
    return out


def _checked_lengths(lengths: np.ndarray, n: int) -> np.ndarray:
    arr = np.asarray(lengths)
    if arr.shape != (n,) or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"token lengths must be a 1-D integer array of {n} items, got {arr.dtype} {arr.shape}")
    return arr.astype(np.int64, copy=False)


__all__ = [
    "BASE_STEPS",
    "FILTER_STEPS",
    "FilterConfig",
    "FilterResult",
    "PairFilter",
    "char_lengths",
    "piece_filters",
    "whitespace_token_lengths",
    "with_rule_langs",
    "without_piece_filters",
]
