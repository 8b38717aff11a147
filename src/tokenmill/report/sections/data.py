"""The page's data section: per split and language, counts, lengths, unused vocabulary, top tokens, charts."""

from __future__ import annotations

from typing import Any

from tokenmill.report import plots
from tokenmill.report.drawing import later
from tokenmill.report.markup import chart, esc, fmt, num, pct, table
from tokenmill.report.sections.paths import part_title, summary_path


def data_section(report: dict[str, Any], max_plots: int, n: int) -> str:
    """Section ``n``: per part: a table per language, mismatches, a length chart (``max_plots`` at most), top tokens."""
    out = [f'<section id="data"><h2>{n}. Data per split and language</h2>',
           '<p class="muted">Items and tokens as prepare counted them (manifest.json); lengths in tokens per item, '
           "<code>&lt;/s&gt;</code> included, from the index arrays. “Never used” counts vocabulary ids that do not "
           "occur in the side's tokens (or in the sample read).</p>"]
    multi = report["kind"] == "multilingual"
    plotted = 0
    for index, part in enumerate(report["parts"]):
        out.append(f'<h3 id="part-{index}">{esc(part_title(part))}</h3>')
        if part["shards"] and part["shards"] != ["."]:
            out.append(f'<p class="small muted">shards: {esc(", ".join(part["shards"]))}</p>')
        out.append(table(("lang", "items", "tokens", "<unk> · %", "mean", "p50", "p90", "p99", "max",
                          "vocabulary never used"), _side_rows(report, index, part), numeric=range(1, 9)))
        for check in part["checks"]:
            out.append(f'<div class="note problems">mismatch: {esc(check)}</div>')
        joint = part.get("joint")
        if joint is not None:
            corr = "–" if joint["correlation"] is None else f'{joint["correlation"]:.3f}'
            out.append(
                f'<p>Pairs where one side is more than 3× as long as the other: '
                f'{num(joint["off_diagonal"], key=f"parts.{index}.joint.off_diagonal")} '
                f'({pct(joint["off_diagonal_share"])}) · length correlation {esc(corr)}'
                + (f' · {fmt(joint["clipped"])} pairs beyond the plotted {joint["limit"]} tokens drawn at the edge'
                   if joint["clipped"] else "") + "</p>"
            )
        wants_plot = (not multi or part["split"] == "train") and plotted < max_plots and not _same_as_documents(
            report, part)
        if wants_plot:
            plotted += 1
            sides = [(lang, side["histogram"]) for lang, side in part["sides"].items()]
            out.append(chart(f"lengths-{index}", later(plots.lengths_chart, f"lengths-{index}", part_title(part), sides,
                                                       joint, part["langs"]),
                             "Left: sentences per length. Right: each cell counts pairs with those "
                             "lengths; mass far from the dashed diagonal means pairs of very different lengths "
                             "(misaligned or badly split lines)." if joint else ""))
        tops = _top_tokens(part)
        out.append(tops if not multi and part["split"] == "train" else
                   f"<details><summary>most frequent tokens</summary>{tops}</details>")
    if multi and plotted >= max_plots:
        out.append(f'<p class="muted">Length charts are drawn for the first {max_plots} train splits; the tables '
                   "above list every part.</p>")
    out.append("</section>")
    return "".join(out)


def _side_rows(report: dict[str, Any], index: int, part: dict[str, Any]) -> list[list[str]]:
    base = summary_path(report, part)
    rows = []
    for lang, side in part["sides"].items():
        key = f"parts.{index}.sides.{lang}"
        rec = side.get("recorded") or {}
        lengths = side["lengths"]
        p = lengths["percentiles"]
        unk_cell = (num(rec["unk"], manifest=(*base, "langs", lang, "unk")) + " · "
                    + num(rec["unk_percent"], manifest=(*base, "langs", lang, "unk_percent"),
                          text=f'{rec["unk_percent"]:.2f}%')) if "unk" in rec else "–"
        sample = "all" if side["sample_exact"] else f'sample of {fmt(side["sampled_tokens"])}'
        rows.append([
            f"<b>{esc(lang or '(text)')}</b>",
            num(rec["sentences"], manifest=(*base, "langs", lang, "sentences")) if "sentences" in rec
            else num(side["items"], key=f"{key}.items"),
            num(rec["tokens"], manifest=(*base, "langs", lang, "tokens")) if "tokens" in rec
            else num(side["tokens"], key=f"{key}.tokens"),
            unk_cell,
            num(lengths["mean"], key=f"{key}.lengths.mean", text=f'{lengths["mean"]:.2f}'),
            num(p["50"], key=f"{key}.lengths.percentiles.50"),
            num(p["90"], key=f"{key}.lengths.percentiles.90"),
            num(p["99"], key=f"{key}.lengths.percentiles.99"),
            num(lengths["max"], key=f"{key}.lengths.max"),
            num(side["unused"], key=f"{key}.unused") + f' <span class="small muted">of {fmt(side["vocab_size"])} '
            f'({pct(side["unused_share"], 1)}; {esc(sample)})</span>',
        ])
    return rows


def _top_tokens(part: dict[str, Any]) -> str:
    cols = []
    for lang, side in part["sides"].items():
        rows = [
            (str(i + 1), f'<code class="tok">{esc(t["text"].replace(" ", "␣"))}</code>',
             f'<span class="small muted">{t["id"]}</span>', f'{fmt(t["count"])}', pct(t["share"]))
            for i, t in enumerate(side["top_tokens"])
        ]
        where = "all tokens" if side["sample_exact"] else f'a sample of {fmt(side["sampled_tokens"])} tokens'
        heading = f"{lang or 'text'}: most frequent tokens ({where}, </s> left out)"
        cols.append(f'<div class="col"><h4>{esc(heading)}</h4>'
                    + table(("#", "token (as text, ␣ = space)", "id", "count", "share"), rows, numeric=(0, 2, 3, 4))
                    + "</div>")
    return f'<div class="row">{"".join(cols)}</div>'


def _same_as_documents(report: dict[str, Any], part: dict[str, Any]) -> bool:
    """Monolingual split whose items are its documents: the LM section already draws their lengths."""
    for split in (report.get("lm") or {}).get("splits", []):
        if split["split"] == part["split"] and split["documents"] == split["items"]:
            return True
    return False

