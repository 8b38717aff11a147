"""What a prepare run reports: counts per split and language, cleaning steps, stage times, tasks, warnings."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tokenmill.prepare.config import SPLITS
from tokenmill.text.lid import is_mix_counter, language_mix

log = logging.getLogger("tokenmill.prepare")


@dataclass
class PrepareSummary:
    """What a run produced: per split and language counts, filter statistics, vocabularies."""

    destdir: Path
    splits: dict[str, dict[str, Any]] = field(default_factory=dict)
    """split -> {"clean": {step: counts}, "langs": {lang: {"sentences", "tokens", "unk", "unk_percent"}}}."""
    vocab: dict[str, Any] = field(default_factory=dict)
    ran: list[str] = field(default_factory=list)
    """Stages that ran in this invocation (the others were already done)."""
    skipped: list[str] = field(default_factory=list)
    stage_seconds: dict[str, float] = field(default_factory=dict)
    """Stage -> wall seconds it took when it ran (in this invocation or the one that made it)."""
    warnings: list[str] = field(default_factory=list)
    """What the user should know about the result (also logged as it happens)."""
    encoders: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Encode stage -> which encoder ran and what its check found (see vocab.encoder_choice)."""
    tasks: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Tasked stage -> one row per task (lines, seconds, attempts, host), when the run used tasks."""
    merge_seconds: dict[str, float] = field(default_factory=dict)
    """Tasked stage -> seconds spent joining its parts."""

    def ordered(self) -> list[tuple[str, dict[str, Any]]]:
        """Splits in train, valid, test order."""
        return sorted(self.splits.items(), key=lambda item: SPLITS.index(item[0]))

    def to_dict(self) -> dict[str, Any]:
        return {"splits": dict(self.ordered()), "vocab": self.vocab}

    def warn(self, message: str) -> None:
        """Log ``message`` now and keep it for the printed summary and the manifest."""
        log.warning("warning: %s", message)
        if message not in self.warnings:
            self.warnings.append(message)

    def stage_table(self) -> dict[str, dict[str, Any]]:
        """Stage -> {"seconds", "ran"} in the order the stages ran."""
        ran = set(self.ran)
        return {name: {"seconds": seconds, "ran": name in ran} for name, seconds in self.stage_seconds.items()}

    def table(self) -> str:
        """A preprocess.log-style table: one row per split and language, then each cleaning step's drops."""
        lines = [f"{'split':<8}{'lang':<8}{'sentences':>12}{'tokens':>14}{'<unk>':>10}{'% <unk>':>9}"]
        for split, info in self.ordered():
            for lang, row in info.get("langs", {}).items():
                lines.append(
                    f"{split:<8}{lang:<8}{row['sentences']:>12}{row['tokens']:>14}{row['unk']:>10}"
                    f"{row['unk_percent']:>8.2f}%"
                )
        for split, info in self.ordered():
            lines.extend(cleaning_lines(split, info.get("clean", {})))
        eod = self.vocab.get("eod")
        if isinstance(eod, dict):
            lines.append(f"end of document: {eod['symbol']} = id {eod['id']}")
        return "\n".join(lines)

    def report(self) -> str:
        """What the command prints: the table, the stage times and the warnings."""
        lines = [self.table()]
        if self.stage_seconds:
            lines.append(self.stage_line())
        lines.extend(task_lines(self.tasks, self.merge_seconds))
        lines.extend(f"warning: {message}" for message in self.warnings)
        return "\n".join(lines)


    def stage_line(self) -> str:
        """The stage times in one short line: one entry per kind of stage (every split, language and
        direction of a kind summed; the manifest and the report keep each stage's own), and which time is
        this run's: a stage that was up to date shows the seconds of the run that made it."""
        kinds: dict[str, list[float]] = {}  # kind -> [seconds, stages, stages that ran]
        for name, row in self.stage_table().items():
            entry = kinds.setdefault(stage_kind(name), [0.0, 0, 0])
            entry[0] += row["seconds"]
            entry[1] += 1
            entry[2] += row["ran"]
        shown = []
        for kind, (seconds, count, ran) in kinds.items():
            state = "" if ran == count else " (up to date)" if not ran else f" ({ran} of {count} ran)"
            shown.append(f"{kind} {seconds:.1f}s{state}")
        ran_seconds = sum(row["seconds"] for row in self.stage_table().values() if row["ran"])
        ran = sum(entry[2] for entry in kinds.values())
        fresh = len(self.stage_seconds) - ran
        head = f"{ran_seconds:.1f}s in {ran} stage{'s' if ran != 1 else ''} this run"
        if fresh:
            head += f"; {fresh} up to date, their times from the run that made them"
        return f"stage times ({head}): {', '.join(shown)}"


def stage_kind(name: str) -> str:
    """``encode.train.en`` -> ``encode``; a direction's ``eng_Latn-deu_Latn.clean.train`` -> ``clean``."""
    parts = name.split(".")
    if len(parts) > 1 and "-" in parts[0]:
        parts = parts[1:]
    return parts[0]


def task_lines(tasks: dict[str, list[dict[str, Any]]], merges: dict[str, float]) -> list[str]:
    """One line per tasked stage: tasks, lines, the slowest task, retries and the merge's seconds."""
    out = []
    for stage, rows in tasks.items():
        retries = sum(row["attempts"] - 1 for row in rows)
        slowest = max(rows, key=lambda row: row["seconds"])
        lines = sum(row["lines"] for row in rows)
        out.append(
            f"tasks {stage}: {len(rows)} tasks, {lines:,} lines, slowest #{slowest['task']} {slowest['seconds']:.1f}s, "
            f"{retries} retr{'y' if retries == 1 else 'ies'}"
            + (f", merge {merges[stage]:.1f}s" if stage in merges else "")
        )
    return out


LISTED_ZEROS = 3
"""Up to this many filters that dropped nothing are listed by name in a cleaning line."""


def cleaning_lines(split: str, steps: dict[str, dict[str, int]]) -> list[str]:
    """One line per cleaning step of a split; what a step dropped (and what was kept) also as a share
    of the lines read, so a filter that removes a quarter of the data is seen at a glance. Filters that
    dropped nothing are counted, not listed, when there are more than :data:`LISTED_ZEROS` of them (a
    preset turns on two dozen); the manifest keeps every counter."""
    base = steps.get("read", {}).get("read", 0)
    lines = []
    for step, counts in steps.items():
        shown = []
        zeros = [key for key, value in counts.items() if key.startswith("dropped_") and not value]
        quiet = set(zeros) if len(zeros) > LISTED_ZEROS else set()
        for key, value in counts.items():
            if is_mix_counter(key) or key in quiet:  # the language mix: a line of its own below, in one order
                continue
            share = (step not in ("read", "normalize") and key not in ("pairs", "lines")) or step == "kept"
            shown.append(f"{key} {value}" + (f" ({100.0 * value / base:.1f}%)" if share and base else ""))
        if quiet:
            shown.append(f"{len(quiet)} more filters dropped none")
        lines.append(f"{split} {step}: {', '.join(shown)}")
        lines.extend(f"{split} language mix {side}: " + ", ".join(f"{label} {n}" for label, n in rows)
                     for side, rows in language_mix(counts).items())
    return lines


def jsonable(value: Any) -> Any:
    """``value`` with every key a string and every leaf a JSON value (others as their ``str``)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)
