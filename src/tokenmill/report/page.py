"""The report as one self-contained HTML page: inline styles, inline SVG charts, two tiny scripts.

Nothing is fetched: the page opens from disk in any browser, offline. Every number that comes
from the manifest carries ``data-manifest`` (its JSON path in ``manifest.json``) and
``data-value``; numbers the report computed carry ``data-key`` (their path in the report's JSON)
and ``data-value``, so a test (or a person with the dev tools) can check the page against both.
Every chart is a ``<figure class="chart" data-chart=NAME>``; after the page loads, a script writes
each chart's rendered size into ``data-rendered`` and counts them on ``<html>`` (``data-charts``,
``data-charts-rendered``), and an error hook lists any script error in ``#report-errors``.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from tokenmill.report import plots
from tokenmill.report.cleaning import REASON_LABELS
from tokenmill.report.drawing import collecting, draw_all, draw_while, fill, later
from tokenmill.report.language_mix import mix_html

_CSS = """
:root { --fg:#1d2430; --muted:#5b6575; --line:#dde2ea; --bg:#f4f6f9; --card:#fff; --accent:#2f6db5;
        --bad:#b5473a; --ok:#2e7d46; --chip:#eef2f7; }
* { box-sizing: border-box; }
body { margin:0; color:var(--fg); background:var(--bg);
       font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans","DejaVu Sans",sans-serif; }
header { background:#1f2d3d; color:#fff; padding:18px 32px 14px; }
header h1 { margin:0 0 4px; font-size:22px; font-weight:650; }
header .sub { color:#c6d0dc; font-size:13px; overflow-wrap:anywhere; }
nav { position:sticky; top:0; z-index:2; background:#fff; border-bottom:1px solid var(--line);
      padding:7px 32px; display:flex; gap:18px; flex-wrap:wrap; font-size:13px; }
nav a { color:var(--accent); text-decoration:none; } nav a:hover { text-decoration:underline; }
main { max-width:1180px; margin:0 auto; padding:6px 22px 40px; }
section { background:var(--card); border:1px solid var(--line); border-radius:8px; padding:14px 22px 18px;
          margin:16px 0; }
h2 { font-size:20px; margin:2px 0 10px; } h3 { font-size:16px; margin:20px 0 6px; }
h4 { font-size:14px; margin:14px 0 4px; color:#334; }
p { margin:6px 0; } .muted { color:var(--muted); } .small { font-size:12px; }
.facts { display:grid; grid-template-columns:repeat(auto-fill,minmax(210px,1fr)); gap:10px; margin:8px 0 4px; }
.fact { border:1px solid var(--line); border-radius:6px; padding:7px 12px; min-width:0; }
.fact .label { color:var(--muted); font-size:12px; }
.fact .value { font-size:16px; font-weight:600; overflow-wrap:anywhere; }
table { border-collapse:collapse; width:100%; margin:6px 0 10px; font-size:13px; }
th, td { border-bottom:1px solid var(--line); padding:4px 8px; text-align:left; vertical-align:top; }
th { background:#f7f9fb; font-weight:600; white-space:nowrap; }
td.n, th.n { text-align:right; font-variant-numeric:tabular-nums; white-space:nowrap; }
figure.chart { margin:8px 0 12px; } figure.chart svg { display:block; width:100%; height:auto; }
.row { display:flex; gap:18px; flex-wrap:wrap; } .row > .col { flex:1 1 340px; min-width:0; }
.text { font-family:ui-monospace,"DejaVu Sans Mono",monospace; font-size:12px; white-space:pre-wrap;
        overflow-wrap:anywhere; }
code.tok { background:var(--chip); border-radius:3px; padding:0 3px; white-space:pre; }
.ok { color:var(--ok); font-weight:600; } .bad { color:var(--bad); font-weight:600; }
.note { background:#fff8e6; border:1px solid #f0dca8; border-radius:6px; padding:6px 10px; margin:8px 0; }
.problems { color:var(--bad); }
details { margin:6px 0; } details > summary { cursor:pointer; color:var(--accent); }
pre.json { background:#f7f9fb; border:1px solid var(--line); border-radius:6px; padding:8px; font-size:12px;
           max-height:360px; overflow:auto; }
#report-errors { color:#fff; background:var(--bad); padding:8px 32px; white-space:pre-wrap; }
footer { text-align:center; color:var(--muted); font-size:12px; padding:0 0 28px; }
"""

_ERROR_HOOK = """
(function () {
  var seen = [];
  function note(message) {
    seen.push(String(message));
    document.documentElement.setAttribute("data-errors", String(seen.length));
    var box = document.getElementById("report-errors");
    if (box) { box.hidden = false; box.textContent = "Script errors:\\n" + seen.join("\\n"); }
  }
  window.addEventListener("error", function (e) { note(e.message || "error"); });
  var original = console.error;
  console.error = function () {
    note(Array.prototype.join.call(arguments, " "));
    return original.apply(console, arguments);
  };
  document.documentElement.setAttribute("data-errors", "0");
})();
"""

_AUDIT = """
(function () {
  function audit() {
    var charts = document.querySelectorAll("figure.chart"), rendered = 0;
    charts.forEach(function (figure) {
      var svg = figure.querySelector("svg"), box = svg ? svg.getBoundingClientRect() : { width: 0, height: 0 };
      figure.setAttribute("data-rendered", Math.round(box.width) + "x" + Math.round(box.height));
      if (box.width > 0 && box.height > 0) { rendered += 1; }
    });
    document.documentElement.setAttribute("data-charts", String(charts.length));
    document.documentElement.setAttribute("data-charts-rendered", String(rendered));
  }
  if (document.readyState === "complete") { audit(); } else { window.addEventListener("load", audit); }
})();
"""


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def fmt(value: Any, digits: int = 2) -> str:
    """Integers with thousands separators, floats to ``digits`` places, None as a dash."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


def pct(share: float | None, digits: int = 2) -> str:
    return "–" if share is None else f"{100 * share:.{digits}f}%"


def num(value: Any, *, key: str | None = None, manifest: Sequence[str] | None = None, text: str | None = None) -> str:
    """A number on the page, tagged with where it comes from (see the module docstring)."""
    attrs = [f'data-value="{esc(json.dumps(value))}"']
    if key is not None:
        attrs.append(f'data-key="{esc(key)}"')
    if manifest is not None:
        attrs.append(f'data-manifest="{esc(json.dumps(list(manifest)))}"')
    return f'<span class="num" {" ".join(attrs)}>{esc(fmt(value) if text is None else text)}</span>'


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], numeric: Iterable[int] = ()) -> str:
    """An HTML table; cells are HTML already; columns in ``numeric`` are right-aligned."""
    right = set(numeric)
    head = "".join(f'<th{" class=n" if i in right else ""}>{esc(h)}</th>' for i, h in enumerate(headers))
    body = "".join(
        "<tr>" + "".join(f'<td{" class=n" if i in right else ""}>{c}</td>' for i, c in enumerate(row)) + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def chart(name: str, svg: str, caption: str = "") -> str:
    cap = f'<figcaption class="muted small">{caption}</figcaption>' if caption else ""
    return f'<figure class="chart" data-chart="{esc(name)}">{svg}{cap}</figure>'


def fact(label: str, value_html: str) -> str:
    return f'<div class="fact"><div class="label">{esc(label)}</div><div class="value">{value_html}</div></div>'


def _bytes(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1024
    return f"{n} B"


# ------------------------------------------------------------------------------------------ sections


def _overview(report: dict[str, Any], n: int) -> str:
    o = report["overview"]
    verify = o.get("verify")
    if verify is None:
        status = '<span class="muted">not checked (--no-verify)</span>'
    elif verify["ok"]:
        status = f'<span class="ok">OK</span> <span class="small muted">{verify["files"]} files</span>'
    else:
        status = f'<span class="bad">{verify["problem_count"]} problem(s)</span>'
    vocab = o["vocab"]
    sizes = ", ".join(
        f"{esc(lang)} {num(size, manifest=_vocab_path(lang))}" for lang, size in vocab["sizes"].items()
    ) or "–"
    facts = [
        fact("data", esc({"pairs": "translation pairs, one direction", "multilingual": "many directions",
                          "monolingual": "monolingual (LM)"}[report["kind"]])),
        fact("store layout", esc(o["layout"])),
        fact("tokenizer", esc(o.get("tokenizer") or "–")),
        fact("vocabulary", sizes),
        fact("checksums (verify)", status),
        fact("data files", f'{num(o["disk"]["listed_files"], key="overview.disk.listed_files")} · '
                           f'{esc(_bytes(o["disk"]["listed_bytes"]))}'),
        fact("work files (.work, .state)", esc(_bytes(o["disk"]["work_bytes"]))),
        fact("prepare stages", f'{len(o["stages"])} · {o["stage_seconds"]:.1f} s'),
        fact("written by", esc(o["created_by"] or "–")),
        fact("report by", esc(o["report_by"])),
    ]
    if o["shards"]:
        facts.append(fact("shard folders", f'{len(o["shards"])} ({esc(o["shards"][0])} … {esc(o["shards"][-1])})'))
    out = [f'<section id="overview"><h2>{n}. Overview</h2>', f'<div class="facts">{"".join(facts)}</div>']
    if verify is not None and not verify["ok"]:
        items = "".join(f"<li>{esc(p)}</li>" for p in verify["problems"])
        out.append(f'<div class="note problems"><b>verify found problems:</b><ul>{items}</ul></div>')
    for warning in o["warnings"]:
        out.append(f'<div class="note">warning from prepare: {esc(warning)}</div>')
    settings_rows = [(esc(k), f'<span class="text">{esc(json.dumps(v, ensure_ascii=False))}</span>')
                     for k, v in o["key_settings"].items()]
    active_filters = {k: v for k, v in o["filters"].items() if v not in (None, False, 0) or k == "drop_empty"}
    filters = esc(json.dumps(active_filters, ensure_ascii=False))
    settings_rows.append(("filters", f'<span class="text">{filters}</span>'))
    settings_rows.append(("normalize", f'<span class="text">{esc(json.dumps(o["normalize"]))}</span>'))
    special = o["vocab"]["special"]
    if special:
        settings_rows.append(("special ids", esc(", ".join(f"{k} {v}" for k, v in special.items()))))
    if o["vocab"].get("eod"):
        settings_rows.append(("end of document", esc(json.dumps(o["vocab"]["eod"], ensure_ascii=False))))
    out.append('<div class="row"><div class="col"><h3>Settings</h3>' + table(("setting", "value"), settings_rows))
    out.append("<details><summary>all settings (manifest.json)</summary>"
               f'<pre class="json">{esc(json.dumps(o["settings"], indent=1, ensure_ascii=False))}</pre></details>')
    kinds = [(esc(k), f'{esc(_bytes(v))}') for k, v in o["disk"]["by_kind"].items()]
    out.append('</div><div class="col"><h3>Sizes on disk</h3>' + table(("files", "bytes"), kinds, numeric=(1,)))
    stores = [
        (f'<span class="text">{esc(s["prefix"])}</span>', esc(s["dtype"]),
         num(s["items"], manifest=("stores", s["prefix"], "items")),
         num(s["tokens"], manifest=("stores", s["prefix"], "tokens")), esc(_bytes(s["bytes"])))
        for s in o["stores"]
    ]
    block = table(("store", "dtype", "items", "tokens", "size"), stores, numeric=(2, 3, 4))
    if len(stores) > 8:
        block = f"<details><summary>{len(stores)} token stores</summary>{block}</details>"
    out.append(block + "</div></div>")
    if o["stage_groups"]:
        out.append("<h3>What the last prepare run spent its time on</h3>")
        out.append(chart("stages", later(plots.stages_chart, o["stage_groups"]),
                         "Stages that were up to date and skipped take ~0 s; see the table for each stage."))
        rows = [(f'<span class="text">{esc(s["name"])}</span>', "ran" if s["ran"] else "up to date",
                 f'{s["seconds"]:.3f}') for s in o["stages"]]
        out.append(f"<details><summary>{len(rows)} stages</summary>"
                   + table(("stage", "status", "seconds"), rows, numeric=(2,)) + "</details>")
    out.append("</section>")
    return "".join(out)


def _vocab_path(lang: str) -> tuple[str, ...]:
    if lang == "(shared)":
        return ("vocab", "size")
    return ("vocab", "dictionaries", "" if lang == "(all)" else lang, "size")


def _summary_path(report: dict[str, Any], part: dict[str, Any]) -> tuple[str, ...]:
    if report["kind"] == "multilingual" and part["direction"]:
        return ("summary", "directions", part["direction"], "splits", part["split"])
    return ("summary", "splits", part["split"])


def _title(part: dict[str, Any]) -> str:
    return f'{part["split"]} ({part["direction"]})' if part["direction"] else part["split"]


def _side_rows(report: dict[str, Any], index: int, part: dict[str, Any]) -> list[list[str]]:
    base = _summary_path(report, part)
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


def _parts(report: dict[str, Any], max_plots: int, n: int) -> str:
    out = [f'<section id="data"><h2>{n}. Data per split and language</h2>',
           '<p class="muted">Items and tokens as prepare counted them (manifest.json); lengths in tokens per item, '
           "<code>&lt;/s&gt;</code> included, from the index arrays. “Never used” counts vocabulary ids that do not "
           "occur in the side's tokens (or in the sample read).</p>"]
    multi = report["kind"] == "multilingual"
    plotted = 0
    for index, part in enumerate(report["parts"]):
        out.append(f'<h3 id="part-{index}">{esc(_title(part))}</h3>')
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
            out.append(chart(f"lengths-{index}", later(plots.lengths_chart, f"lengths-{index}", _title(part), sides,
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


def _same_as_documents(report: dict[str, Any], part: dict[str, Any]) -> bool:
    """Monolingual split whose items are its documents: the LM section already draws their lengths."""
    for split in (report.get("lm") or {}).get("splits", []):
        if split["split"] == part["split"] and split["documents"] == split["items"]:
            return True
    return False


def _cleaning(report: dict[str, Any], max_plots: int, n: int) -> str:
    if report["kind"] == "multilingual":
        return _cleaning_many(report, n)
    out = [f'<section id="cleaning"><h2>{n}. Cleaning</h2>', _CLEANING_INTRO]
    plotted = 0
    for index, part in enumerate(report["parts"]):
        info = part.get("cleaning")
        if info is None:
            continue
        base = (*_summary_path(report, part), "clean")
        title = _title(part)
        out.append(f"<h3>{esc(title)}</h3>")
        out.append(_funnel_line(info, base, part))
        out.append(mix_html(info.get("language_mix"), base, table=table, num=num, esc=esc))
        if not any(s["dropped"] for s in info["steps"]):
            out.append('<p class="muted">No step dropped anything.</p>')
            continue
        rows = []
        for step in info["steps"]:
            rows.append((esc(step["label"]), f'<span class="small muted">{esc(step["reason"])}</span>',
                         num(step["dropped"], manifest=_step_path(base, step)),
                         pct(step["dropped"] / max(info["read"], 1)), fmt(step["remaining"])))
        out.append(table(("step", "reason", "dropped", "% of read", "left after"), rows, numeric=(2, 3, 4)))
        if plotted < max_plots:
            plotted += 1
            out.append(chart(f"funnel-{index}", later(plots.funnel_chart, f"funnel-{index}", title, info)))
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
    out = [f'<section id="cleaning"><h2>{n}. Cleaning</h2>', _CLEANING_INTRO]
    parts = [(i, p) for i, p in enumerate(report["parts"]) if p.get("cleaning")]
    reasons: list[str] = []
    labels: dict[str, str] = {}
    for _, part in parts:
        for step in part["cleaning"]["steps"]:
            if step["reason"] not in reasons:
                reasons.append(step["reason"])
                labels[step["reason"]] = step["label"]
    rows = []
    for _, part in parts:
        info = part["cleaning"]
        base = (*_summary_path(report, part), "clean")
        steps = {s["reason"]: s for s in info["steps"]}
        rows.append([
            esc(part["direction"] or ""), esc(part["split"]), num(info["read"], manifest=(*base, "read", "read")),
            *[num(steps[r]["dropped"], manifest=_step_path(base, steps[r])) if r in steps else "–" for r in reasons],
            _kept(info, base), pct(info["kept_share"]),
        ])
    out.append(table(("direction", "split", "read", *[labels[r] for r in reasons], "kept", "kept %"),
                     rows, numeric=range(2, len(reasons) + 5)))
    train = [(p["direction"] or "", p["cleaning"]) for _, p in parts if p["split"] == "train"]
    if train and any(s["dropped"] for _, info in train for s in info["steps"]):
        out.append(chart("cleaning-directions", later(plots.drops_by_direction_chart, train, reasons, labels)))
    missing = [p for _, p in parts if p["cleaning"].get("samples") is None]
    for _, part in parts:
        if part["cleaning"].get("samples") is not None:
            samples = _samples(part["cleaning"])
            if samples:
                out.append(f"<h3>{esc(_title(part))}</h3>{samples}")
    if missing:
        out.append(f'<p class="muted small">No drop samples for {len(missing)} of {len(parts)} parts (looked for '
                   f"{esc(Path(missing[0]['cleaning']['samples_path']).parent.parent)}/DIRECTION/SPLIT.json; this "
                   "directory was prepared before prepare kept them, or its work files were removed).</p>")
    out.append("</section>")
    return "".join(out)


def _step_path(base: tuple[str, ...], step: dict[str, Any]) -> tuple[str, ...] | None:
    """Where a step's count sits in manifest.json (None: derived, e.g. items skipped while reading)."""
    return None if step.get("manifest") is None else (*base, *step["manifest"])


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


def _directions(report: dict[str, Any], n: int) -> str:
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


def _batching(report: dict[str, Any], n: int) -> str:
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
    rows = []
    entries = dict(b["modes"])
    if b.get("packed") is not None:
        entries[f'packed ({b["pack_length"]}-token rows)'] = b["packed"]
    for name, m in entries.items():
        if "error" in m:
            rows.append((esc(name), f'<span class="bad">{esc(m["error"])}</span>', "", "", "", "", "", ""))
            continue
        key = f"batching.modes.{name}" if name in b["modes"] else "batching.packed"
        rows.append((
            f"<b>{esc(name)}</b>",
            num(m["batches"], key=f"{key}.batches"),
            num(m["batches_per_rank"], key=f"{key}.batches_per_rank"),
            num(m["samples"], key=f"{key}.samples"),
            fmt(m["dropped"]),
            num(m["padding_fraction"], key=f"{key}.padding_fraction", text=pct(m["padding_fraction"])),
            f'{fmt(m["tokens_per_rank_min"])} – {fmt(m["tokens_per_rank_max"])}',
            f'{m["plan_seconds"]:.2f}',
        ))
    out.append(table(("mode", "batches", "per rank", "samples", "dropped", "padding", "tokens per rank (min – max)",
                      "plan s"), rows, numeric=range(1, 8)))
    packed = b.get("packed")
    if packed and "extra" in packed and packed["extra"]:
        extra = packed["extra"]
        given = "" if b["pack_length_given"] else (" (the next power of two holding four median pairs and the "
                                                   "99th-percentile pair; set it with --pack-length)")
        out.append(f'<p class="muted">Packed: {fmt(extra.get("rows"))} rows of {b["pack_length"]} tokens per side'
                   f'{esc(given)}, {extra.get("pairs_per_row", 0):.2f} pairs per row ({esc(extra.get("strategy"))}); '
                   "pairs longer than a row are dropped and counted.</p>")
    good = {k: v for k, v in entries.items() if "padding_fraction" in v}
    if good:
        out.append(chart("padding", later(plots.padding_chart, good)))
    shapes = b.get("shapes")
    if shapes and (shapes.get("grid") or shapes.get("points")):
        out.append(chart("shapes", later(plots.shapes_chart, shapes, b["mode"]),
                         "Each dot (or cell, when there are many shapes) counts the batches with that many rows and "
                         "that longest row; a fixed-shape trainer (XLA) compiles once per distinct shape."))
        rows = [(fmt(s["rows"]), fmt(s["src"]), fmt(s["tgt"]), fmt(s["batches"])) for s in shapes["top"]]
        out.append("<details><summary>most common batch shapes</summary>"
                   + table(("rows", "longest source", "longest target", "batches"), rows, numeric=range(4))
                   + "</details>")
    detail = b["modes"].get(b["mode"]) or {}
    if detail.get("tokens_per_rank") and len(detail["tokens_per_rank"]) > 1:
        out.append(chart("ranks", later(plots.ranks_chart, detail["tokens_per_rank"])))
    out.append("</section>")
    return "".join(out)


def _lm(report: dict[str, Any], n: int) -> str:
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


def early_charts(report: dict[str, Any], max_plots: int, busy: Callable[[], bool]) -> dict[str, str]:
    """The charts of the sections ``report`` holds before its batching, LM and blend numbers (a
    :func:`~tokenmill.report.gather.gather` ``early`` step), drawn while ``busy()`` holds; for
    :func:`render`'s ``drawn``. None for language-model data: its data section shows the LM
    numbers too, so its charts are not known early."""
    if report["kind"] == "monolingual" or not busy():
        return {}
    known = {**report, "batching": None, "lm": None, "blend": None, "seconds": 0.0}
    with collecting() as charts:
        _bodies(known, max_plots)
    return draw_while(charts, busy)


def _bodies(report: dict[str, Any], max_plots: int) -> list[tuple[str, str, str]]:
    """(anchor, title, HTML with chart placeholders) of every section the report has."""
    has_cleaning = any(p.get("cleaning") for p in report["parts"])
    sections: list[tuple[str, str, bool, Callable[[int], str]]] = [
        ("overview", "Overview", True, lambda n: _overview(report, n)),
        ("data", "Data", True, lambda n: _parts(report, max_plots, n)),
        ("cleaning", "Cleaning", has_cleaning, lambda n: _cleaning(report, max_plots, n)),
        ("directions", "Directions", report["directions"] is not None, lambda n: _directions(report, n)),
        ("batching", "Batching", report["batching"] is not None, lambda n: _batching(report, n)),
        ("lm", "LM data", report["lm"] is not None or report["blend"] is not None, lambda n: _lm(report, n)),
    ]
    present = [(anchor, label, build) for anchor, label, shown, build in sections if shown]
    return [(anchor, label, build(i + 1)) for i, (anchor, label, build) in enumerate(present)]


def render(report: dict[str, Any], max_plots: int = 24, *, parallel: bool = True,
           drawn: dict[str, str] | None = None) -> str:
    """The whole page for a report dict from :func:`tokenmill.report.gather.gather`: the text first,
    then the charts (:mod:`~tokenmill.report.drawing`; ``parallel=False``: all drawn here, in turn;
    ``drawn``: charts drawn already, from :func:`early_charts`)."""
    with collecting() as charts:
        bodies = _bodies(report, max_plots)
    svgs = draw_all(charts, parallel, drawn)
    nav = "".join(f'<a href="#{a}">{esc(label)}</a>' for a, label, _ in bodies)
    o = report["overview"]
    name = report["directory"].rstrip("/").rsplit("/", 1)[-1]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>tokenmill report: {esc(name)}</title><style>{_CSS}</style><script>{_ERROR_HOOK}</script></head>"
        "<body>"
        f'<header><h1>tokenmill report: {esc(name)}</h1><div class="sub">{esc(report["directory"])} · '
        f'{esc(o["created_by"] or "")} · report by {esc(o["report_by"])}</div></header>'
        '<div id="report-errors" hidden></div>'
        f"<nav>{nav}</nav><main>{fill(''.join(body for _, _, body in bodies), svgs)}</main>"
        f'<footer>Gathered in {report["seconds"]:.2f} s. The same numbers as JSON: '
        f"<code>tokenmill report {esc(report['directory'])} --json</code></footer>"
        f"<script>{_AUDIT}</script></body></html>\n"
    )


__all__ = ["early_charts", "render"]
