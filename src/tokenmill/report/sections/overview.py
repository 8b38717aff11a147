"""The page's overview section: what the directory holds, settings, sizes on disk, stage times."""

from __future__ import annotations

import json
from typing import Any

from tokenmill.report import plots
from tokenmill.report.drawing import later
from tokenmill.report.markup import byte_size, chart, esc, fact, num, table
from tokenmill.report.sections.paths import vocab_path

_KINDS = {"pairs": "translation pairs, one direction", "multilingual": "many directions",
          "monolingual": "monolingual (LM)"}
"""How the overview names each kind of data directory."""


def overview_section(report: dict[str, Any], n: int) -> str:
    """Section ``n``: facts, verify's problems, prepare's warnings, settings, sizes on disk, stage times."""
    o = report["overview"]
    out = [f'<section id="overview"><h2>{n}. Overview</h2>', f'<div class="facts">{"".join(_facts(report))}</div>']
    verify = o.get("verify")
    if verify is not None and not verify["ok"]:
        items = "".join(f"<li>{esc(p)}</li>" for p in verify["problems"])
        out.append(f'<div class="note problems"><b>verify found problems:</b><ul>{items}</ul></div>')
    for warning in o["warnings"]:
        out.append(f'<div class="note">warning from prepare: {esc(warning)}</div>')
    out.append('<div class="row"><div class="col"><h3>Settings</h3>' + table(("setting", "value"), _settings(o)))
    out.append("<details><summary>all settings (manifest.json)</summary>"
               f'<pre class="json">{esc(json.dumps(o["settings"], indent=1, ensure_ascii=False))}</pre></details>')
    kinds = [(esc(k), f'{esc(byte_size(v))}') for k, v in o["disk"]["by_kind"].items()]
    out.append('</div><div class="col"><h3>Sizes on disk</h3>' + table(("files", "bytes"), kinds, numeric=(1,)))
    out.append(_stores(o) + "</div></div>")
    out.append(_stages(o))
    out.append("</section>")
    return "".join(out)


def _verify_status(verify: dict[str, Any] | None) -> str:
    if verify is None:
        return '<span class="muted">not checked (--no-verify)</span>'
    if verify["ok"]:
        return f'<span class="ok">OK</span> <span class="small muted">{verify["files"]} files</span>'
    return f'<span class="bad">{verify["problem_count"]} problem(s)</span>'


def _facts(report: dict[str, Any]) -> list[str]:
    """The grid of facts at the top: kind, layout, tokenizer, vocabulary, verify, sizes, stages, versions."""
    o = report["overview"]
    sizes = ", ".join(
        f"{esc(lang)} {num(size, manifest=vocab_path(lang))}" for lang, size in o["vocab"]["sizes"].items()
    ) or "–"
    facts = [
        fact("data", esc(_KINDS[report["kind"]])),
        fact("store layout", esc(o["layout"])),
        fact("tokenizer", esc(o.get("tokenizer") or "–")),
        fact("vocabulary", sizes),
        fact("checksums (verify)", _verify_status(o.get("verify"))),
        fact("data files", f'{num(o["disk"]["listed_files"], key="overview.disk.listed_files")} · '
                           f'{esc(byte_size(o["disk"]["listed_bytes"]))}'),
        fact("work files (.work, .state)", esc(byte_size(o["disk"]["work_bytes"]))),
        fact("prepare stages", f'{len(o["stages"])} · {o["stage_seconds"]:.1f} s'),
        fact("written by", esc(o["created_by"] or "–")),
        fact("report by", esc(o["report_by"])),
    ]
    if o["shards"]:
        facts.append(fact("shard folders", f'{len(o["shards"])} ({esc(o["shards"][0])} … {esc(o["shards"][-1])})'))
    return facts


def _settings(o: dict[str, Any]) -> list[tuple[str, str]]:
    """Rows of the settings table: the key settings, active filters, normalization, special ids, end of document."""
    rows = [(esc(k), f'<span class="text">{esc(json.dumps(v, ensure_ascii=False))}</span>')
            for k, v in o["key_settings"].items()]
    active_filters = {k: v for k, v in o["filters"].items() if v not in (None, False, 0) or k == "drop_empty"}
    filters = esc(json.dumps(active_filters, ensure_ascii=False))
    rows.append(("filters", f'<span class="text">{filters}</span>'))
    rows.append(("normalize", f'<span class="text">{esc(json.dumps(o["normalize"]))}</span>'))
    special = o["vocab"]["special"]
    if special:
        rows.append(("special ids", esc(", ".join(f"{k} {v}" for k, v in special.items()))))
    if o["vocab"].get("eod"):
        rows.append(("end of document", esc(json.dumps(o["vocab"]["eod"], ensure_ascii=False))))
    return rows


def _stores(o: dict[str, Any]) -> str:
    """The table of token stores (folded when there are more than eight)."""
    stores = [
        (f'<span class="text">{esc(s["prefix"])}</span>', esc(s["dtype"]),
         num(s["items"], manifest=("stores", s["prefix"], "items")),
         num(s["tokens"], manifest=("stores", s["prefix"], "tokens")), esc(byte_size(s["bytes"])))
        for s in o["stores"]
    ]
    block = table(("store", "dtype", "items", "tokens", "size"), stores, numeric=(2, 3, 4))
    if len(stores) > 8:
        block = f"<details><summary>{len(stores)} token stores</summary>{block}</details>"
    return block


def _stages(o: dict[str, Any]) -> str:
    """Where the last prepare run spent its time: a chart by stage group and the table of stages."""
    if not o["stage_groups"]:
        return ""
    rows = [(f'<span class="text">{esc(s["name"])}</span>', "ran" if s["ran"] else "up to date",
             f'{s["seconds"]:.3f}') for s in o["stages"]]
    return ("<h3>What the last prepare run spent its time on</h3>"
            + chart("stages", later(plots.stages_chart, o["stage_groups"]),
                    "Stages that were up to date and skipped take ~0 s; see the table for each stage.")
            + f"<details><summary>{len(rows)} stages</summary>"
            + table(("stage", "status", "seconds"), rows, numeric=(2,)) + "</details>")
