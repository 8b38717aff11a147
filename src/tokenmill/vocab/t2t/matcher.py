"""Greedy longest-match segmentation of many escaped tokens at once (numpy, no per-character loop).

T2T segments an escaped token by taking, from the left, the longest vocabulary string that matches
there.  This does the same for a whole batch: the vocabulary is a trie whose edges are sorted
integer keys ``node * BASE + code point``; all tokens walk it in lock step (one ``searchsorted`` per
character), and the next walk starts where each token's longest match ended.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from tokenmill.errors import TokenmillError

_BASE = 0x110001  # one more than the largest code point
_STOP = 0x110000  # code of the separator between tokens: never an edge label
_SEP = "\n"  # escaped tokens never contain a raw newline


class VocabTrie:
    """The vocabulary as a trie with sorted edge keys, for batched longest-prefix matching."""

    def __init__(self, id_of: Mapping[str, int]) -> None:
        children: dict[tuple[int, int], int] = {}
        terminal = [-1]
        for string, sid in id_of.items():
            node = 0
            for char in string:
                key = (node, ord(char))
                child = children.get(key)
                if child is None:
                    child = len(terminal)
                    children[key] = child
                    terminal.append(-1)
                node = child
            terminal[node] = sid
        keys = np.fromiter((n * _BASE + c for n, c in children), dtype=np.int64, count=len(children))
        child_ids = np.fromiter(children.values(), dtype=np.int64, count=len(children))
        order = np.argsort(keys)
        self.keys = keys[order]
        self.child = child_ids[order]
        self.terminal = np.asarray(terminal, dtype=np.int64)
        # The first step from the root is the busiest: a dense table instead of a search.
        self.root_child = np.full(_BASE, -1, dtype=np.int32)
        root_edges = self.keys < _BASE
        self.root_child[self.keys[root_edges]] = self.child[root_edges]
        self.max_len = max((len(s) for s in id_of), default=0)

    def segment(self, escaped_tokens: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Greedy segmentation of every token: ``(ids, count per token)``, ids in token order."""
        text = _SEP.join(escaped_tokens) + _SEP
        codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(np.int64)
        is_sep = codes == ord(_SEP)
        codes[is_sep] = _STOP
        seps = np.flatnonzero(is_sep)
        token_start = np.concatenate(([0], seps[:-1] + 1)).astype(np.int64)
        keys, child, terminal = self.keys, self.child, self.terminal
        n_keys = len(keys)
        found_at: list[np.ndarray] = []
        found_id: list[np.ndarray] = []
        cur = token_start[~is_sep[token_start]]  # empty escaped tokens have nothing to match
        while cur.size:
            best_len = np.zeros(cur.size, dtype=np.int64)
            best_id = np.full(cur.size, -1, dtype=np.int64)
            first = self.root_child[codes[cur]].astype(np.int64)
            active = np.flatnonzero(first >= 0)
            nodes = first[active]
            depth = 0
            while True:
                term = terminal[nodes]
                ends = term >= 0
                best_len[active[ends]] = depth + 1
                best_id[active[ends]] = term[ends]
                depth += 1
                if not active.size or depth >= self.max_len:
                    break
                key = nodes * _BASE + codes[cur[active] + depth]
                idx = np.minimum(np.searchsorted(keys, key), n_keys - 1)
                hit = keys[idx] == key
                active = active[hit]
                nodes = child[idx[hit]]
            if (best_len == 0).any():
                where = int(cur[np.flatnonzero(best_len == 0)[0]])
                raise TokenmillError(
                    f"the vocabulary cannot spell {text[where : text.index(_SEP, where)]!r}: character "
                    f"{text[where]!r} is not a subtoken of its own (not a vocabulary T2T built?)"
                )
            found_at.append(cur)
            found_id.append(best_id)
            nxt = cur + best_len
            cur = nxt[~is_sep[nxt]]
        if not found_at:
            return np.zeros(0, dtype=np.int64), np.zeros(len(escaped_tokens), dtype=np.int64)
        at = np.concatenate(found_at)
        order = np.argsort(at, kind="stable")
        ids = np.concatenate(found_id)[order]
        token_of = np.searchsorted(token_start, at[order], side="right") - 1
        return ids, np.bincount(token_of, minlength=len(escaped_tokens)).astype(np.int64)
