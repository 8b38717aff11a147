"""T2T's ``build_from_token_counts`` and ``build_to_target_size``, same results, vectorized.

T2T, per iteration: segment every escaped token greedily with the current vocabulary; count every
substring that starts at a subtoken boundary (length < ``max_subtoken_length``); walk the strings
with count >= ``min_count`` longest first, accepting a string whose (reduced) count is still
>= ``min_count`` and subtracting that count from all its proper prefixes; the new vocabulary is the
reserved tokens, then the accepted strings and the whole alphabet sorted by (count, string)
descending.  ``build_to_target_size`` bisects ``min_count`` until the size is within 1%.

Here the substrings are the nodes of a suffix trie built once (``suffix_trie``).  Counts for any
set of boundaries are interval sums.  The longest-first pass is a bottom-up recursion over chain
nodes: with ``A(v)`` the sum of what v's children pass up, v's count at its turn is
``count(v) - A(v)``; v is accepted when that is >= min_count and then passes ``count(v)`` up, else
``A(v)``.  Along a chain all strings share one count, so only its longest string can be accepted.
Iteration 0 (segmentation into single characters) is the same for every ``min_count``, so the
bisection reuses it; each probe then costs a few array passes per iteration.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from tokenmill.errors import ConfigError
from tokenmill.vocab.t2t.escape import ESCAPE_CHARS, escape_token
from tokenmill.vocab.t2t.suffix_trie import SEPARATOR, build_suffix_trie

RESERVED_TOKENS = ("<pad>", "<EOS>")


def check_reserved(reserved_tokens: Sequence[str] | None) -> list[str]:
    """T2T's rule: the default reserved tokens must be a prefix of the ones given (None: defaults)."""
    if reserved_tokens is None:
        return list(RESERVED_TOKENS)
    reserved = list(reserved_tokens)
    for default, proposed in zip(RESERVED_TOKENS, reserved, strict=False):
        if default != proposed:
            raise ConfigError(
                f"reserved tokens {reserved!r} must start with {list(RESERVED_TOKENS)!r} "
                "(T2T keeps <pad>=0 and <EOS>=1)"
            )
    return reserved


def substring_cap(max_subtoken_length: int | None) -> int | None:
    """Longest substring T2T counts: ``max_subtoken_length - 1`` (its range end is exclusive)."""
    if max_subtoken_length is None:
        return None
    return max(0, int(max_subtoken_length) - 1)


class SubwordBuilder:
    """Everything about one ``token_counts`` that does not depend on ``min_count``; ``build`` probes one."""

    def __init__(
        self,
        token_counts: Mapping[str, int],
        reserved_tokens: Sequence[str] | None = None,
        max_subtoken_length: int | None = None,
    ) -> None:
        self.reserved = check_reserved(reserved_tokens)
        tokens = list(token_counts.keys())
        for token in tokens:
            if not isinstance(token, str):
                raise ConfigError(f"token_counts keys must be str, got {type(token).__name__}: {token!r}")
        alphabet = set().union(*tokens) if tokens else set()
        alphabet |= set().union(*self.reserved) if self.reserved else set()
        alphabet |= ESCAPE_CHARS
        self.alphabet = alphabet
        self.escaped_reserved = [escape_token(t, alphabet) for t in self.reserved]
        weights = np.fromiter((int(token_counts[t]) for t in tokens), dtype=np.int64, count=len(tokens))
        escaped = [
            t.replace("\\", "\\\\").replace("_", "\\u") + "_" if "\n" not in t else escape_token(t, alphabet)
            for t in tokens
        ]
        self.trie = trie = build_suffix_trie(escaped, substring_cap(max_subtoken_length))
        lengths = np.fromiter((len(e) + 1 for e in escaped), dtype=np.int64, count=len(escaped))
        self._weight_at = np.repeat(weights, lengths)  # token count at every text offset
        self._is_sep = np.frombuffer(trie.text.encode("utf-32-le", "surrogatepass"), np.uint32) == ord(SEPARATOR)
        self._count0 = self._interval_sums(self._weight_at[trie.sa], trie.node_l, trie.node_r)
        self._top = np.flatnonzero(trie.node_lo == 0)
        self._top_char = [trie.text[int(trie.sa[trie.node_l[v]])] for v in self._top]
        self._reserved_hits = self._find_reserved()
        self._probes: dict[tuple[int, int], list[str]] = {}

    @staticmethod
    def _interval_sums(values: np.ndarray, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        cum = np.zeros(len(values) + 1, dtype=np.int64)
        np.cumsum(values, out=cum[1:])
        return cum[right] - cum[left]

    def _find_reserved(self) -> tuple[np.ndarray, np.ndarray]:
        """Offsets in the text where an escaped reserved token (a vocabulary entry) matches."""
        text = self.trie.text
        at: list[int] = []
        length: list[int] = []
        for token in self.escaped_reserved:
            if not token:
                continue
            start = text.find(token)
            while start >= 0:
                at.append(start)
                length.append(len(token))
                start = text.find(token, start + 1)
        return np.asarray(at, dtype=np.int64), np.asarray(length, dtype=np.int32)

    def build(self, min_count: float, num_iterations: int = 4) -> list[str]:
        """The subtoken list T2T's ``build_from_token_counts(token_counts, min_count, ...)`` ends with."""
        threshold = max(1, math.ceil(min_count))
        key = (threshold, num_iterations)
        if key not in self._probes:
            self._probes[key] = self._build(threshold, num_iterations)
        return self._probes[key]

    def _build(self, m: int, num_iterations: int) -> list[str]:
        trie = self.trie
        if num_iterations <= 0:
            # T2T leaves the alphabet in set order here (hash-seed dependent); sorted is reproducible.
            return self.reserved + sorted(self.alphabet)
        cand = np.flatnonzero(self._count0 >= m)
        c_l, c_r = trie.node_l[cand], trie.node_r[cand]
        c_hi, c_lo = trie.node_hi[cand], trie.node_lo[cand]
        parent = trie.node_parent[cand]
        c_parent = np.where(parent >= 0, np.searchsorted(cand, parent), -1)
        levels = np.searchsorted(c_lo, np.arange(int(c_lo.max(initial=0)) + 2))
        top_pos = np.searchsorted(cand, self._top)
        top_is_cand = top_pos < len(cand)
        top_is_cand[top_is_cand] = cand[top_pos[top_is_cand]] == self._top[top_is_cand]

        accepted_l = accepted_r = np.zeros(0, dtype=np.int64)
        accepted_hi = np.zeros(0, dtype=np.int32)
        for iteration in range(num_iterations):
            if iteration > 0:
                cum = self._boundary_cumsum(accepted_l, accepted_r, accepted_hi)
                cnt = cum[c_r] - cum[c_l]
                top_cnt = cum[trie.node_r[self._top]] - cum[trie.node_l[self._top]]
            else:
                cnt = self._count0[cand]
                top_cnt = self._count0[self._top]
            residual, up = self._accept(cnt, c_parent, levels, m)
            accepted = (residual >= m) & (c_hi >= 2)
            accepted_l, accepted_r, accepted_hi = c_l[accepted], c_r[accepted], c_hi[accepted]

        # The alphabet's final counts: a character's node keeps what its chain did not pass up.
        top_final = top_cnt.copy()
        in_cand = top_pos[top_is_cand]
        hi_one = c_hi[in_cand] == 1
        top_final[top_is_cand] = np.where(hi_one, residual[in_cand], cnt[in_cand] - up[in_cand])
        char_count = dict(zip(self._top_char, top_final.tolist(), strict=False))
        pairs = [(char_count.get(a, 0), a) for a in self.alphabet]
        text, sa = trie.text, trie.sa
        starts = sa[accepted_l].tolist()
        pairs.extend(
            (count, text[s : s + h])
            for count, s, h in zip(residual[accepted].tolist(), starts, accepted_hi.tolist(), strict=False)
        )
        pairs.sort(reverse=True)
        return self.escaped_reserved + [s for _, s in pairs]

    @staticmethod
    def _accept(cnt: np.ndarray, c_parent: np.ndarray, levels: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
        """Bottom-up longest-first acceptance: each node's count at its turn, and what it passes up."""
        passed = np.zeros(len(cnt), dtype=np.int64)
        residual = np.empty(len(cnt), dtype=np.int64)
        up = np.empty(len(cnt), dtype=np.int64)
        for level in range(len(levels) - 2, -1, -1):
            a, b = int(levels[level]), int(levels[level + 1])
            if a == b:
                continue
            res = cnt[a:b] - passed[a:b]
            residual[a:b] = res
            u = np.where(res >= m, cnt[a:b], passed[a:b])
            up[a:b] = u
            if level > 0:
                np.add.at(passed, c_parent[a:b], u)
        return residual, up

    def _boundary_cumsum(self, acc_l: np.ndarray, acc_r: np.ndarray, acc_hi: np.ndarray) -> np.ndarray:
        """Segment every token greedily with the vocabulary (accepted strings, alphabet, reserved)
        and return the cumulative boundary weight in suffix-array order."""
        trie = self.trie
        n = len(trie.sa)
        best = np.ones(n + 1, dtype=np.int32)  # the extra slot answers rank -1 (separators; never read)
        order = np.argsort(acc_hi, kind="stable")
        for left, right, h in zip(acc_l[order].tolist(), acc_r[order].tolist(), acc_hi[order].tolist(), strict=False):
            best[left:right] = h
        match = best[trie.rank]
        hit_at, hit_len = self._reserved_hits
        if hit_at.size:
            np.maximum.at(match, hit_at, hit_len)
        is_sep = self._is_sep
        weights = np.zeros(n, dtype=np.int64)
        cur = trie.token_start[~is_sep[trie.token_start]]  # (no tokens at all: text is one separator)
        while cur.size:
            weights[trie.rank[cur]] = self._weight_at[cur]
            nxt = cur + match[cur]
            cur = nxt[~is_sep[nxt]]
        cum = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(weights, out=cum[1:])
        return cum


def build_to_target_size(
    builder: SubwordBuilder,
    target_size: int,
    min_val: float,
    max_val: float,
    num_iterations: int = 4,
    on_probe: Callable[[float, int], None] | None = None,
) -> list[str]:
    """T2T's bisection over ``min_count``: same probes, same choice, so the same vocabulary."""
    if min_val > max_val:
        raise ConfigError(f"min_val {min_val} is greater than max_val {max_val}")
    if target_size < 1:
        raise ConfigError(f"target vocabulary size must be positive, got {target_size}")

    def bisect(lo: float, hi: float) -> list[str]:
        present = (hi + lo) // 2
        vocab = builder.build(present, num_iterations)
        if on_probe is not None:
            on_probe(present, len(vocab))
        if abs(len(vocab) - target_size) * 100 < target_size or lo >= hi or present < 2:
            return vocab
        if len(vocab) > target_size:
            other = bisect(present + 1, hi)
        else:
            other = bisect(lo, present - 1)
        if abs(len(other) - target_size) < abs(len(vocab) - target_size):
            return other
        return vocab

    return bisect(min_val, max_val)
