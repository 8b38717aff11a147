"""The page's many-directions section: pairs and tokens per direction, temperature sampling of epoch 1."""

from __future__ import annotations

from typing import Any

from tokenmill.report import plots
from tokenmill.report.drawing import later
from tokenmill.report.markup import chart, esc, fmt, num, pct, table


def directions_section(report: dict[str, Any], n: int) -> str:
    """Section ``n``: pairs and train tokens per direction, then epoch 1's temperature sampling."""
    d = report["directions"]
    out = [f'<section id="directions"><h2>{n}. Many directions</h2>']
    rows = []
    for row in d["directions"]:
        name = row["direction"]
        base = ("summary", "directions", name, "splits")
        src, tgt = name.split("-", 1) if "-" in name else (name, "")
        tokens = row["train_tokens"]
        rows.append((
            f"<b>{esc(name)}</b>",
            *[num(row["pairs"][s], manifest=(*base, s, "langs", src, "sentences")) if s in row["pairs"] else "–"
              for s in ("train", "valid", "test")],
            num(tokens[src], manifest=(*base, "train", "langs", src, "tokens")) if src in tokens else "–",
            num(tokens[tgt], manifest=(*base, "train", "langs", tgt, "tokens")) if tgt in tokens else "–",
            esc(f'{len(row["shards"])}: {", ".join(row["shards"])}'),
        ))
    out.append(table(("direction", "train pairs", "valid", "test", "train source tokens", "train target tokens",
                      "train shards"), rows, numeric=range(1, 6)))
    if d["sampling"]:
        out.append("<h3>Temperature sampling, epoch 1</h3>"
                   '<p class="muted">p ∝ n<sup>1/T</sup> over the pairs of the shard each direction reads in epoch 1 '
                   "(what training's sampler does); drawn = pairs of that direction in the epoch; epochs over data = "
                   "drawn / pairs (above 1: the direction is repeated).</p>")
        out.append(chart("sampling", later(plots.sampling_chart, d["sampling"])))
        out.append(_sampling_table(d["sampling"]))
    out.append("</section>")
    return "".join(out)


def _sampling_table(sampling: list[dict[str, Any]]) -> str:
    """Per direction: pairs, then share / drawn / epochs over its data at each temperature."""
    first = sampling[0]["directions"]
    group = "".join(f'<th colspan="3" style="text-align:center">T = {e["temperature"]:g}</th>' for e in sampling)
    sub = "".join('<th class="n">share</th><th class="n">drawn</th><th class="n">epochs</th>' for _ in sampling)
    body = []
    for j, x in enumerate(first):
        cells = [f"<td>{esc(x['direction'])}</td>", f'<td class="n">{fmt(x["kept"])}</td>']
        for i, entry in enumerate(sampling):
            y = entry["directions"][j]
            key = f"directions.sampling.{i}.directions.{j}"
            cells += [
                f'<td class="n">{num(y["share"], key=f"{key}.share", text=pct(y["share"]))}</td>',
                f'<td class="n">{num(y["drawn"], key=f"{key}.drawn")}</td>',
                f'<td class="n">{y["epochs_over_data"]:.2f}</td>',
            ]
        body.append("<tr>" + "".join(cells) + "</tr>")
    total = sum(x["kept"] for x in first)
    body.append(f'<tr><td><b>pairs per epoch</b></td><td class="n">{fmt(total)}</td>'
                + "".join(f'<td></td><td class="n"><b>{fmt(e["virtual_size"])}</b></td><td></td>' for e in sampling)
                + "</tr>")
    return (f'<table><thead><tr><th rowspan="2">direction</th><th class="n" rowspan="2">pairs (epoch-1 shard)</th>'
            f"{group}</tr><tr>{sub}</tr></thead><tbody>{''.join(body)}</tbody></table>")

