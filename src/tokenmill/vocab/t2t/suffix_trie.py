"""A compressed trie of every suffix of every escaped token, built with numpy (no per-character loop).

T2T's vocabulary builder counts, for each token, every substring that starts at a subtoken boundary
(up to a maximum length).  Every such substring is a prefix of a suffix of an escaped token, so all
of them are nodes of one trie over those suffixes.  Along an unbranched run of that trie every
string has the same count, so it is stored as one *chain* node covering string lengths
``lo+1 .. hi``; its strings are the prefixes of the suffixes in the suffix-array interval
``[l, r)``.  Counting any set of weighted suffixes then costs one cumulative sum, and T2T's
longest-first acceptance becomes a bottom-up pass over these nodes (see ``builder``).

The trie is built by most-significant-character radix refinement: at depth ``d`` each group of
suffixes that share their first ``d`` characters is split by character ``d``; groups of one
suffix become leaves at once, so the work is proportional to the total length of shared prefixes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SEPARATOR = "\n"  # escaped tokens never contain a raw newline (it is escaped as \10;)


@dataclass
class SuffixTrie:
    """Chain nodes of the suffix trie of ``text`` (escaped tokens, each followed by SEPARATOR)."""

    text: str  # the escaped tokens, each followed by SEPARATOR
    token_start: np.ndarray  # int64 [T]: offset of each token in text
    sa: np.ndarray  # int64 [N]: text offsets of all non-separator positions, in suffix order
    rank: np.ndarray  # int64 [len(text)]: index into sa of each offset (-1 at separators)
    node_l: np.ndarray  # int64 [M]: start of the node's suffix-array interval
    node_r: np.ndarray  # int64 [M]: end (exclusive) of that interval
    node_lo: np.ndarray  # int32 [M]: length of the parent's longest string (0 at the top level)
    node_hi: np.ndarray  # int32 [M]: length of this chain's longest string
    node_parent: np.ndarray  # int64 [M]: index of the parent node, -1 at the top level
    max_len: int  # longest string represented (the substring length cap)

    def string(self, node: int) -> str:
        """The longest string of chain node ``node``."""
        start = int(self.sa[self.node_l[node]])
        return self.text[start : start + int(self.node_hi[node])]


def _codepoints(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


# One breadth-first radix pass over every suffix at once: a dozen parallel arrays (positions, group offsets,
# chain nodes, the node chunks) go from depth to depth, and would all cross every boundary of a split: 128 lines.
def build_suffix_trie(escaped_tokens: list[str], max_len: int | None) -> SuffixTrie:
    """Build the chain-node suffix trie of ``escaped_tokens``, cutting strings at ``max_len`` chars.

    ``max_len`` None means no cut.  Node ids grow with ``node_lo``, so a parent precedes its children.
    """
    text = SEPARATOR.join(escaped_tokens) + SEPARATOR
    cp = _codepoints(text)
    is_sep = cp == ord(SEPARATOR)
    present = np.bincount(cp, minlength=0x110000) > 0
    present[ord(SEPARATOR)] = False
    char_rank = np.cumsum(present, dtype=np.int64)
    crank = char_rank[cp]
    crank[is_sep] = 0  # the end of a token sorts before every character
    base = int(crank.max()) + 1 if len(crank) else 1

    seps = np.flatnonzero(is_sep)
    token_start = np.concatenate(([0], seps[:-1] + 1)).astype(np.int64)
    pos = np.flatnonzero(~is_sep).astype(np.int64)
    remaining = seps[np.searchsorted(seps, pos)] - pos  # characters from pos to the token's end
    longest = int(remaining.max()) if len(remaining) else 0
    cap = longest if max_len is None else max(0, min(int(max_len), longest))

    n = len(pos)
    sa = np.empty(n, dtype=np.int64)
    rem_at = np.zeros(len(text), dtype=np.int64)
    rem_at[pos] = remaining

    chunks_l: list[np.ndarray] = []
    chunks_r: list[np.ndarray] = []
    chunks_lo: list[np.ndarray] = []
    chunks_parent: list[np.ndarray] = []
    hi_ids: list[np.ndarray] = []
    hi_vals: list[np.ndarray] = []
    n_nodes = 0

    act_pos = pos
    act_off = np.zeros(n, dtype=np.int64)  # suffix-array offset where the entry's group starts
    act_node = np.full(n, -1, dtype=np.int64)  # the group's chain node (-1: the root)
    depth = 0
    while act_pos.size:
        if depth >= cap:
            chars = np.zeros(act_pos.size, dtype=np.int64)
        else:
            chars = crank[act_pos + depth]
        if depth == 0:
            order = np.argsort(chars, kind="stable")
        else:
            order = np.argsort(act_off * base + chars)
        act_pos, act_off, act_node, chars = act_pos[order], act_off[order], act_node[order], chars[order]
        count = act_pos.size
        idx = np.arange(count, dtype=np.int64)
        new_group = np.empty(count, dtype=bool)
        new_group[0] = True
        np.not_equal(act_off[1:], act_off[:-1], out=new_group[1:])
        new_sub = new_group.copy()
        new_sub[1:] |= chars[1:] != chars[:-1]
        group_first = np.maximum.accumulate(np.where(new_group, idx, 0))
        offset = act_off + (idx - group_first)

        ended = chars == 0
        sa[offset[ended]] = act_pos[ended]

        sub_idx = np.flatnonzero(new_sub)
        sub_size = np.diff(np.append(sub_idx, count))
        sub_char = chars[sub_idx]
        sub_off = offset[sub_idx]
        sub_node = act_node[sub_idx]
        group_of_sub = np.cumsum(new_group)[sub_idx] - 1
        n_groups = int(group_of_sub[-1]) + 1
        nonempty = sub_char > 0
        n_branches = np.bincount(group_of_sub[nonempty], minlength=n_groups)
        has_end = np.bincount(group_of_sub[~nonempty], minlength=n_groups) > 0
        group_node = act_node[np.flatnonzero(new_group)]
        continues = (n_branches == 1) & ~has_end & (group_node >= 0)

        closing = ~continues & (group_node >= 0)
        if closing.any():
            hi_ids.append(group_node[closing])
            hi_vals.append(np.full(int(closing.sum()), depth, dtype=np.int32))

        sub_continues = continues[group_of_sub] & nonempty
        sub_new = nonempty & ~continues[group_of_sub]
        k = int(sub_new.sum())
        new_ids = np.full(sub_idx.size, -1, dtype=np.int64)
        if k:
            ids = n_nodes + np.arange(k, dtype=np.int64)
            new_ids[sub_new] = ids
            l_new = sub_off[sub_new]
            size_new = sub_size[sub_new]
            chunks_l.append(l_new)
            chunks_r.append(l_new + size_new)
            chunks_lo.append(np.full(k, depth, dtype=np.int32))
            chunks_parent.append(sub_node[sub_new])
            leaf = size_new == 1
            if leaf.any():
                leaf_pos = act_pos[sub_idx[sub_new][leaf]]
                sa[l_new[leaf]] = leaf_pos
                hi_ids.append(ids[leaf])
                hi_vals.append(np.minimum(rem_at[leaf_pos], cap).astype(np.int32))
            n_nodes += k

        survive = sub_continues | (sub_new & (sub_size >= 2))
        keep = np.repeat(survive, sub_size)
        act_pos = act_pos[keep]
        act_off = np.repeat(sub_off[survive], sub_size[survive])
        act_node = np.repeat(np.where(sub_continues, sub_node, new_ids)[survive], sub_size[survive])
        depth += 1

    def cat(chunks: list[np.ndarray], dtype: type) -> np.ndarray:
        return np.concatenate(chunks).astype(dtype, copy=False) if chunks else np.zeros(0, dtype=dtype)

    node_hi = np.zeros(n_nodes, dtype=np.int32)
    if hi_ids:
        node_hi[np.concatenate(hi_ids)] = np.concatenate(hi_vals)
    rank = np.full(len(text), -1, dtype=np.int64)
    rank[sa] = np.arange(n, dtype=np.int64)
    return SuffixTrie(
        text=text,
        token_start=token_start,
        sa=sa,
        rank=rank,
        node_l=cat(chunks_l, np.int64),
        node_r=cat(chunks_r, np.int64),
        node_lo=cat(chunks_lo, np.int32),
        node_hi=node_hi,
        node_parent=cat(chunks_parent, np.int64),
        max_len=cap,
    )
