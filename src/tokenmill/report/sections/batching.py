"""The page's batching preview: epoch 1 planned in every mode, padding, batch shapes, tokens per rank."""

from __future__ import annotations

from typing import Any

from tokenmill.report import plots
from tokenmill.report.drawing import later
from tokenmill.report.markup import chart, esc, fmt, num, pct, table


def batching_section(report: dict[str, Any], n: int) -> str:
    """Section ``n``: what was planned, one row per mode (and packed rows), padding, batch shapes, tokens per rank."""
    b = report["batching"]
    out = [f'<section id="batching"><h2>{n}. Batching preview</h2>']
    if "error" in b:
        return "".join(out) + f'<p class="bad">{esc(b["error"])}</p></section>'
    if b.get("temperature") is not None:
        pairs = (f'{fmt(b["pairs"])} pairs in all shards; epoch 1 reads one shard per direction, sampled at '
                 f'T = {b["temperature"]:g}')
    else:
        pairs = f'{fmt(b["pairs"])} pairs'
    out.append(f'<p>Epoch 1 of <b>{esc(b["what"])}</b> ({esc(pairs)}), '
               f'max_tokens {fmt(b["max_tokens"])} per batch and side, world size {fmt(b["world_size"])}; the '
               "same plans training computes (<code>tokenmill batches</code>). Mode in detail: "
               f'<b>{esc(b["mode"])}</b>.</p>')
    entries = dict(b["modes"])
    if b.get("packed") is not None:
        entries[f'packed ({b["pack_length"]}-token rows)'] = b["packed"]
    rows = [_mode_row(name, m, b["modes"]) for name, m in entries.items()]
    out.append(table(("mode", "batches", "per rank", "samples", "dropped", "padding", "tokens per rank (min – max)",
                      "plan s"), rows, numeric=range(1, 8)))
    out.append(_packed_note(b))
    good = {k: v for k, v in entries.items() if "padding_fraction" in v}
    if good:
        out.append(chart("padding", later(plots.padding_chart, good)))
    out.append(_shapes(b))
    detail = b["modes"].get(b["mode"]) or {}
    if detail.get("tokens_per_rank") and len(detail["tokens_per_rank"]) > 1:
        out.append(chart("ranks", later(plots.ranks_chart, detail["tokens_per_rank"])))
    out.append("</section>")
    return "".join(out)


def _mode_row(name: str, m: dict[str, Any], modes: dict[str, Any]) -> tuple[str, ...]:
    """One row of the modes table (the error in the second cell when the mode could not be planned)."""
    if "error" in m:
        return (esc(name), f'<span class="bad">{esc(m["error"])}</span>', "", "", "", "", "", "")
    key = f"batching.modes.{name}" if name in modes else "batching.packed"
    return (
        f"<b>{esc(name)}</b>",
        num(m["batches"], key=f"{key}.batches"),
        num(m["batches_per_rank"], key=f"{key}.batches_per_rank"),
        num(m["samples"], key=f"{key}.samples"),
        fmt(m["dropped"]),
        num(m["padding_fraction"], key=f"{key}.padding_fraction", text=pct(m["padding_fraction"])),
        f'{fmt(m["tokens_per_rank_min"])} – {fmt(m["tokens_per_rank_max"])}',
        f'{m["plan_seconds"]:.2f}',
    )


def _packed_note(b: dict[str, Any]) -> str:
    """How the packed rows came out (rows, row length and where it came from, pairs per row); "" without them."""
    packed = b.get("packed")
    if not (packed and "extra" in packed and packed["extra"]):
        return ""
    extra = packed["extra"]
    given = "" if b["pack_length_given"] else (" (the next power of two holding four median pairs and the "
                                               "99th-percentile pair; set it with --pack-length)")
    return (f'<p class="muted">Packed: {fmt(extra.get("rows"))} rows of {b["pack_length"]} tokens per side'
            f'{esc(given)}, {extra.get("pairs_per_row", 0):.2f} pairs per row ({esc(extra.get("strategy"))}); '
            "pairs longer than a row are dropped and counted.</p>")


def _shapes(b: dict[str, Any]) -> str:
    """The chart of batch shapes and the most common ones; "" when there are none."""
    shapes = b.get("shapes")
    if not (shapes and (shapes.get("grid") or shapes.get("points"))):
        return ""
    rows = [(fmt(s["rows"]), fmt(s["src"]), fmt(s["tgt"]), fmt(s["batches"])) for s in shapes["top"]]
    return (chart("shapes", later(plots.shapes_chart, shapes, b["mode"]),
                  "Each dot (or cell, when there are many shapes) counts the batches with that many rows and "
                  "that longest row; a fixed-shape trainer (XLA) compiles once per distinct shape.")
            + "<details><summary>most common batch shapes</summary>"
            + table(("rows", "longest source", "longest target", "batches"), rows, numeric=range(4))
            + "</details>")
