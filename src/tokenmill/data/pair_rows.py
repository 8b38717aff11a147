"""Rows of one side of a pair dataset with fairseq's per-item options applied, for a whole batch at once.

fairseq's order: prepend a token (a language tag), append ``</s>`` to the target when it is missing, put
``<s>`` first when it is missing, remove a trailing ``</s>`` from the source. Here the options compose
(fairseq's ``append_bos`` and ``remove_eos_from_source`` work on the raw item and lose the others).
"""

from __future__ import annotations

import numpy as np

from tokenmill.data.pair_options import PairOptions, SideRows


def option_rows(tokens: np.ndarray, offsets: np.ndarray, options: PairOptions, *, source: bool) -> SideRows:
    """The stored rows ``tokens``/``offsets`` (flat tokens, int64 offsets n+1) of the source side
    (``source=True``) or the target side, with the options applied: a few numpy calls, no loop per row."""
    o = options
    prepend = o.prepend_src if source else o.prepend_tgt
    append_eos = (not source) and o.append_eos_to_target
    drop_eos = source and o.remove_eos_from_source
    n = len(offsets) - 1
    if prepend is None and not append_eos and not o.append_bos and not drop_eos:
        return SideRows(tokens, offsets, np.zeros(n, dtype=np.int64))
    raw_len = np.diff(offsets)
    nonempty = raw_len > 0
    last = np.full(n, -1, dtype=np.int64)
    first = np.full(n, -1, dtype=np.int64)
    last[nonempty] = tokens[offsets[1:][nonempty] - 1]
    first[nonempty] = tokens[offsets[:-1][nonempty]]
    lead_tok = np.full(n, prepend, dtype=np.int64) if prepend is not None else first
    tail_tok = np.where(nonempty, last, lead_tok) if prepend is not None else last
    add_eos = (tail_tok != o.eos) if append_eos else np.zeros(n, dtype=bool)
    lead_now = np.where((lead_tok == -1) & add_eos, o.eos, lead_tok)
    add_bos = (lead_now != o.bos) if o.append_bos else np.zeros(n, dtype=bool)
    cut_eos = (nonempty & (last == o.eos)) if drop_eos else np.zeros(n, dtype=bool)
    has_pre = prepend is not None
    shift = add_bos.astype(np.int64) + int(has_pre)
    body = raw_len - cut_eos
    out_len = shift + body + add_eos
    out_off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(out_len, out=out_off[1:])
    out = np.empty(
        int(out_off[-1]), dtype=np.result_type(tokens.dtype, np.min_scalar_type(max(o.bos, o.eos, prepend or 0)))
    )
    # stored tokens, minus a removed trailing </s>
    keep = np.ones(len(tokens), dtype=bool)
    if cut_eos.any():
        keep[offsets[1:][cut_eos] - 1] = False
        kept = tokens[keep]
    else:
        kept = tokens
    dest = np.arange(len(kept), dtype=np.int64) + np.repeat(
        out_off[:-1] + shift - np.concatenate([[0], np.cumsum(body)[:-1]]), body
    )
    out[dest] = kept
    rows_bos = np.flatnonzero(add_bos)
    out[out_off[:-1][rows_bos]] = o.bos
    if has_pre:
        out[out_off[:-1] + add_bos] = prepend
    rows_eos = np.flatnonzero(add_eos)
    out[out_off[1:][rows_eos] - 1] = o.eos
    return SideRows(out, out_off, shift)
