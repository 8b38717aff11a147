"""The page's language-model section: documents and GPT samples per split, and the blend."""

from __future__ import annotations

from typing import Any

from tokenmill.report import plots
from tokenmill.report.drawing import later
from tokenmill.report.markup import chart, esc, fmt, num, pct, table


def lm_section(report: dict[str, Any], n: int) -> str:
    """Section ``n``: documents and GPT samples of each split, then the blend's realised shares."""
    lm, blend = report["lm"], report["blend"]
    out = [f'<section id="lm"><h2>{n}. Language-model data</h2>']
    if lm is not None:
        seq = lm["seq_length"]
        for i, split in enumerate(lm["splits"]):
            g = split["gpt"]
            key = f"lm.splits.{i}"
            docs = ("document index" if split["has_document_index"] else "one document per item (no document index)")
            out.append(f'<h3>{esc(split["split"])}</h3>')
            out.append(table(
                ("documents", "tokens", "mean doc length", "p50", "p99", "max", f"longer than {seq}",
                 f"GPT samples ({seq} tokens)", "samples spanning documents"),
                [(num(split["documents"], key=f"{key}.documents"), num(split["tokens"], key=f"{key}.tokens"),
                  f'{split["lengths"]["mean"]:.1f}', fmt(split["lengths"]["percentiles"]["50"]),
                  fmt(split["lengths"]["percentiles"]["99"]), fmt(split["lengths"]["max"]),
                  num(split["longer_than_sample"], key=f"{key}.longer_than_sample"),
                  num(g["samples"], key=f"{key}.gpt.samples"),
                  num(g["crossing"], key=f"{key}.gpt.crossing")
                  + f' <span class="small muted">({pct(g["crossing_share"], 1)}, '
                    f'{g["documents_per_sample"]:.2f} docs per sample)</span>')],
                numeric=range(8)))
            out.append(f'<p class="muted small">Documents: {esc(docs)}. Samples per epoch as megatron-core\'s '
                       "GPTDataset cuts them (seq_length + 1 tokens each, the last partial one dropped); change the "
                       "length with --seq-length.</p>")
            out.append(chart(f"documents-{i}", later(plots.documents_chart, f"documents-{i}", split["split"],
                                                                      split["histogram"], seq)))
    if blend is not None:
        out.append(f'<h3>Blend of {len(blend["datasets"])} datasets, {fmt(blend["samples"])} samples of '
                   f'{blend["seq_length"]} tokens</h3>')
        rows = [(f'<span class="text">{esc(d["prefix"])}</span>', pct(d["weight"]),
                 num(d["share"], key=f"blend.datasets.{i}.share", text=pct(d["share"])),
                 num(d["drawn"], key=f"blend.datasets.{i}.drawn"), fmt(d["samples_per_epoch"]),
                 "–" if d["epochs"] is None else f'{d["epochs"]:.2f}')
                for i, d in enumerate(blend["datasets"])]
        out.append(table(("dataset", "weight", "realised share", "samples drawn", "samples per epoch",
                          "epochs of it"), rows, numeric=range(1, 6)))
        out.append(chart("blend", later(plots.blend_chart, blend), "More than one epoch of a dataset means its samples "
                                                            "repeat within the blend."))
    out.append("</section>")
    return "".join(out)

