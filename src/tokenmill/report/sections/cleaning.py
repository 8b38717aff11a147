"""The page's cleaning section: the funnel of each part, step counts, charts, samples of what was dropped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tokenmill.report import plots
from tokenmill.report.cleaning import REASON_LABELS
from tokenmill.report.drawing import later
from tokenmill.report.language_mix import mix_html
from tokenmill.report.markup import chart, esc, fmt, num, pct, table
from tokenmill.report.sections.paths import part_title, step_path, summary_path


def cleaning_section(report: dict[str, Any], max_plots: int, n: int) -> str:
    """Section ``n``: per part, the funnel, the steps' counts, a chart (at most ``max_plots``), drop samples."""
    if report["kind"] == "multilingual":
        return _cleaning_many(report, n)
    out = [f'<section id="cleaning"><h2>{n}. Cleaning</h2>', _CLEANING_INTRO]
    plotted = 0
    for index, part in enumerate(report["parts"]):
        info = part.get("cleaning")
        if info is None:
            continue
        base = (*summary_path(report, part), "clean")
        heading = part_title(part)
        out.append(f"<h3>{esc(heading)}</h3>")
        out.append(_funnel_line(info, base, part))
        out.append(mix_html(info.get("language_mix"), base, table=table, num=num, esc=esc))
        if not any(s["dropped"] for s in info["steps"]):
            out.append('<p class="muted">No step dropped anything.</p>')
            continue
        rows = []
        for step in info["steps"]:
            rows.append((esc(step["label"]), f'<span class="small muted">{esc(step["reason"])}</span>',
                         num(step["dropped"], manifest=step_path(base, step)),
                         pct(step["dropped"] / max(info["read"], 1)), fmt(step["remaining"])))
        out.append(table(("step", "reason", "dropped", "% of read", "left after"), rows, numeric=(2, 3, 4)))
        if plotted < max_plots:
            plotted += 1
            out.append(chart(f"funnel-{index}", later(plots.funnel_chart, f"funnel-{index}", heading, info)))
        out.append(_samples(info))
    out.append("</section>")
    return "".join(out)


_CLEANING_INTRO = (
           '<p class="muted">Counts per step from manifest.json, in pipeline order: normalize (changes text, drops '
           "nothing), the filters, leakage against valid/test, dedup. The samples show what each step dropped, as "
           "the step saw the text (after normalization), chosen by a seeded hash of the line number: the same "
           "lines on every run, whatever the chunking or worker count.</p>")


def _kept(info: dict[str, Any], base: tuple[str, ...]) -> str:
    path = info.get("kept_manifest")
    return num(info["kept"], manifest=None if path is None else (*base, *path))


def _funnel_line(info: dict[str, Any], base: tuple[str, ...], part: dict[str, Any]) -> str:
    later = (f'{fmt(info["cleaned"])} after the text clean-up → '
             if info["cleaned"] != info["kept"] else "")
    return (
        f'<p>{num(info["read"], manifest=(*base, "read", "read"))} read → {later}'
        f'{_kept(info, base)} kept ({pct(info["kept_share"])}); '
        f'normalization changed {num(info["normalized_changed"], manifest=(*base, "normalize", "changed"))} of '
        f'{fmt(info["normalized_lines"])} lines.'
        + ("" if info["adds_up"] else ' <span class="bad">(the step counts do not add up)</span>') + "</p>"
    )


def _cleaning_many(report: dict[str, Any], n: int) -> str:
    """Many directions: one table of every (direction, split), one chart of the train drops, samples per direction."""
    parts = [p for p in report["parts"] if p.get("cleaning")]
    labels = _reason_labels(parts)
    out = [f'<section id="cleaning"><h2>{n}. Cleaning</h2>', _CLEANING_INTRO, _directions_table(report, parts, labels)]
    train = [(p["direction"] or "", p["cleaning"]) for p in parts if p["split"] == "train"]
    if train and any(s["dropped"] for _, info in train for s in info["steps"]):
        out.append(chart("cleaning-directions",
                         later(plots.drops_by_direction_chart, train, list(labels), labels)))
    out.append(_samples_by_direction(parts))
    out.append("</section>")
    return "".join(out)


def _reason_labels(parts: list[dict[str, Any]]) -> dict[str, str]:
    """Every drop reason of the parts, in the order first met, with its label (the first part's)."""
    labels: dict[str, str] = {}
    for part in parts:
        for step in part["cleaning"]["steps"]:
            labels.setdefault(step["reason"], step["label"])
    return labels


def _directions_table(report: dict[str, Any], parts: list[dict[str, Any]], labels: dict[str, str]) -> str:
    """One row per (direction, split): read, dropped per reason, kept."""
    rows = []
    for part in parts:
        info = part["cleaning"]
        base = (*summary_path(report, part), "clean")
        steps = {s["reason"]: s for s in info["steps"]}
        rows.append([
            esc(part["direction"] or ""), esc(part["split"]), num(info["read"], manifest=(*base, "read", "read")),
            *[num(steps[r]["dropped"], manifest=step_path(base, steps[r])) if r in steps else "–" for r in labels],
            _kept(info, base), pct(info["kept_share"]),
        ])
    return table(("direction", "split", "read", *labels.values(), "kept", "kept %"),
                 rows, numeric=range(2, len(labels) + 5))


def _samples_by_direction(parts: list[dict[str, Any]]) -> str:
    """The drop samples of each part that kept them, and a note on how many parts kept none."""
    out = []
    for part in parts:
        if part["cleaning"].get("samples") is not None:
            samples = _samples(part["cleaning"])
            if samples:
                out.append(f"<h3>{esc(part_title(part))}</h3>{samples}")
    missing = [p for p in parts if p["cleaning"].get("samples") is None]
    if missing:
        out.append(f'<p class="muted small">No drop samples for {len(missing)} of {len(parts)} parts (looked for '
                   f"{esc(Path(missing[0]['cleaning']['samples_path']).parent.parent)}/DIRECTION/SPLIT.json; this "
                   "directory was prepared before prepare kept them, or its work files were removed).</p>")
    return "".join(out)


def _samples(info: dict[str, Any]) -> str:
    samples = info.get("samples")
    if samples is None:
        return (f'<p class="muted small">No drop samples in {esc(info["samples_path"])} (this directory was prepared '
                "before prepare kept them, or its work files were removed).</p>")
    counts = {s["reason"]: s["dropped"] for s in info["steps"]}
    labels = {s["reason"]: s["label"] for s in info["steps"]}
    order = [r for r in counts if r in samples] + [r for r in samples if r not in counts]  # pipeline order
    out = []
    for reason in order:
        records = samples[reason]
        if not records:
            continue
        label = labels.get(reason) or REASON_LABELS.get(reason, reason)
        paired = any(r["tgt"] is not None for r in records)
        rows = [
            (f'{r["line"]:,}', f'<div class="text" dir="auto">{esc(r["src"]) or "<i>(empty)</i>"}</div>')
            + ((f'<div class="text" dir="auto">{esc(r["tgt"]) if r["tgt"] else "<i>(empty)</i>"}</div>',)
               if paired else ())
            for r in records
        ]
        headers = ("line", "source", "target") if paired else ("line", "text")
        total = counts.get(reason)
        of = f" of {fmt(total)} dropped" if total is not None else ""
        opened = " open" if not out else ""  # the first reason shows its table; the others open on a click
        out.append(f"<details{opened}><summary>{esc(label)}: {len(records)} sample(s){of}</summary>"
                   + table(headers, rows, numeric=(0,)) + "</details>")
    return "<h4>What was dropped</h4>" + "".join(out) if out else ""

