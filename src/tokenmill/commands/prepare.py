"""``tokenmill prepare``: flags generated from :class:`~tokenmill.prepare.PrepareConfig` fields.

Every config field is a flag (``trainpref`` -> ``--trainpref``, booleans as ``--x/--no-x``);
normalizer fields keep their names (``--nfkc``), filter fields get a ``--filter-`` prefix
(``--filter-max-tokens``). A YAML file (``-c``) gives defaults; flags given on the command line
override it. One source of truth: a field's type hint gives the flag's type (``Literal`` fields
are choices), its docstring (or trailing comment) the help text, its default the shown default, and
the ``# ---- name`` comment above it in the class the section of ``--help`` it is listed in.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect as pyinspect
import logging
import re
import sys
import time
from pathlib import Path
from typing import Any

import click

from tokenmill.commands.peer_flags import apply_peer_flags, peer_options
from tokenmill.prepare import PrepareConfig, build_config, load_yaml, prepare
from tokenmill.prepare.config import NESTED, flag_name
from tokenmill.prepare.object_storage import upload_file
from tokenmill.prepare.pipeline import PHASES
from tokenmill.prepare.run import run_task, status, write_slurm_script
from tokenmill.report import write_report
from tokenmill.settings import click_type, hints, is_sequence
from tokenmill.store.remote import is_url

_SECTION = re.compile(r"#\s*----\s+(\w.*)")
RUN = "Run"
_LAZY = "(from the config class)"  # a field flag's section, looked up when --help is shown


def _sentence(text: str) -> str:
    """One help style: whitespace collapsed, a capital first letter, a period at the end."""
    text = " ".join(text.split())
    if not text:
        return text
    if text[0].islower() and (len(text) == 1 or text[1].islower() or text[1] == " "):
        text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."


@functools.cache
def _field_docs(cls: type) -> tuple[dict[str, str], dict[str, str]]:
    """(help, section) per dataclass field: the docstring under the field or the trailing ``# comment``
    on its line; the last ``# ---- name`` comment above it. Read from the class's source, so only when
    ``--help`` is shown (it costs more than the rest of the command's set-up)."""
    source = pyinspect.getsource(cls)
    docs: dict[str, str] = {}
    sections: dict[str, str] = {}
    tree = ast.parse(source)
    body = tree.body[0].body  # type: ignore[attr-defined]
    lines = source.splitlines()
    headings = [(number, m.group(1).strip()) for number, line in enumerate(lines, 1) if (m := _SECTION.search(line))]
    for i, node in enumerate(body):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id[0] != "_":
            name = node.target.id
            following = body[i + 1] if i + 1 < len(body) else None
            if isinstance(following, ast.Expr) and isinstance(getattr(following, "value", None), ast.Constant):
                docs[name] = _sentence(str(following.value.value))
            elif "#" in lines[node.lineno - 1]:
                docs[name] = _sentence(lines[node.lineno - 1].split("#", 1)[1])
            above = [title for number, title in headings if number < node.lineno]
            if above:
                sections[name] = above[-1][0].upper() + above[-1][1:]
    return docs, sections


def _shown_default(item: dataclasses.Field, flag: str) -> str | None:  # type: ignore[type-arg]
    default = item.default
    if default is dataclasses.MISSING or default is None:
        return None
    if isinstance(default, bool):
        return f"--{flag}" if default else f"--no-{flag}"
    return str(default)


class _Option(click.Option):
    """A flag that knows its ``--help`` section."""

    def __init__(self, *args: Any, section: str = RUN, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.section = section


class _FieldOption(_Option):
    """The flag of a config field: its help text and section come from the config class's source
    (:func:`_field_docs`), read when first asked for (``--help``), not at every start."""

    def __init__(self, *args: Any, field: tuple[type, str, str | None], shown: str | None, **kwargs: Any) -> None:
        self._field, self._shown = field, shown
        self._help: str | None = None
        self._section: str | None = None
        super().__init__(*args, **kwargs)

    @property  # type: ignore[override]
    def help(self) -> str:
        if self._help is None:
            cls, name, _ = self._field
            text = _field_docs(cls)[0].get(name, "")
            if self._shown is not None:
                text += f"  [default: {self._shown}]"
            self._help = pyinspect.cleandoc(text) if text else text  # as click.Option does with a given help
        return self._help

    @help.setter
    def help(self, value: str | None) -> None:
        self._help = value

    @property  # type: ignore[override]
    def section(self) -> str:
        if self._section is None:
            _, name, group = self._field
            self._section = _field_docs(PrepareConfig)[1].get(group or name, RUN)
        return self._section

    @section.setter
    def section(self, value: str) -> None:
        self._section = None if value == _LAZY else value


class _SectionedCommand(click.Command):
    """``--help`` with one section of options per group, in the order of the config class."""

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        sections: dict[str, list[tuple[str, str]]] = {}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is not None:
                sections.setdefault(getattr(param, "section", RUN), []).append(record)
        width = 30  # one column width for every section (click sizes each list by itself)
        for title in sorted(sections, key=lambda title: title == RUN):  # the run options last
            with formatter.section(title):
                formatter.write_dl([(first.ljust(width), text) for first, text in sections[title]], col_max=width)


def _options() -> list[tuple[click.Option, str, str | None]]:
    """(option, field name, nested group or None) for every config field, in the class's order; the
    fields of a nested group (normalize, filters) take the place and section of the group's field."""
    made: list[tuple[click.Option, str, str | None]] = []

    def add(cls: type, group: str | None) -> None:
        hinted = hints(cls)
        for item in dataclasses.fields(cls):
            if group is None and item.name in NESTED:
                add(NESTED[item.name], item.name)
                continue
            flag = flag_name(item.name, group)[2:]
            kind, is_flag = click_type(hinted[item.name])
            dest = item.name if not group else f"{group}__{item.name}"
            lazy = {"field": (cls, item.name, group), "shown": _shown_default(item, flag), "section": _LAZY}
            if is_flag:
                option = _FieldOption([f"--{flag}/--no-{flag}", dest], default=None, **lazy)
            else:
                metavar = "A,B,..." if is_sequence(hinted[item.name]) else None
                option = _FieldOption([f"--{flag}", dest], type=kind, default=None, metavar=metavar, **lazy)
            made.append((option, item.name, group))

    add(PrepareConfig, None)
    return made


_OPTIONS = _options()


def _run(
    config_path: str | None, force: bool, quiet: bool, as_json: bool, report: bool, phase: str | None,
    task: int | None, show_status: bool, **given: Any,
) -> None:
    settings: dict[str, Any] = load_yaml(config_path) if config_path else {}
    overrides: dict[str, Any] = {}
    for _, name, group in _OPTIONS:
        value = given.get(name if not group else f"{group}__{name}")
        if value is None:
            continue
        if group:
            overrides.setdefault(group, {})[name] = value
        else:
            overrides[name] = value
    apply_peer_flags(given, overrides, {**settings, **overrides})  # Megatron's/fairseq's flags without a field
    config: PrepareConfig = build_config(settings, overrides=overrides, config_file=config_path)
    if not quiet:
        logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    if show_status:
        click.echo(status(config))
        return
    if task is not None or phase in ("clean", "encode"):
        if task is None or phase not in ("clean", "encode"):
            raise click.UsageError("--task I goes with --phase clean or --phase encode (one task of that phase)")
        for record in run_task(config, phase, task):
            if quiet:
                continue
            if record.get("merged"):
                click.echo(f"task {task} ({phase}): {record['stage']} is already merged; nothing to do")
            else:
                click.echo(f"task {task} ({phase}): {record['lines']:,} lines in {record['seconds']:.1f}s")
        return
    if config.engine == "slurm" and phase is None:
        script = write_slurm_script(config)
        click.echo(f"wrote {script}: submit it with `bash {script}` on a Slurm login node; "
                   f"progress: tokenmill prepare -c {script.parent / 'config.yaml'} --status")
        return
    started = time.perf_counter()
    summary = prepare(config, force=force, progress=None if not quiet else False, phase=phase)
    if phase not in (None, "merge"):
        if not quiet:
            click.echo(f"phase {phase} done; tasks: {status(config)}")
        return
    elapsed = time.perf_counter() - started
    if as_json:
        import json

        click.echo(json.dumps({**summary.to_dict(), "ran": summary.ran, "seconds": round(elapsed, 3)}))
    elif not quiet:
        click.echo(summary.report())
        click.echo(f"done in {elapsed:.1f}s: {len(summary.ran)} stages ran, {len(summary.skipped)} up to date; "
                   f"output in {config.destdir}")
    if report:
        try:
            page, _ = write_report(summary.destdir)  # the local folder (a URL destdir is worked on locally)
            if is_url(config.destdir):
                page = upload_file(config.destdir, Path(page), config.storage_options)
        except Exception as error:  # the data is prepared and verified; the page is extra
            click.echo(f"warning: {config.destdir} is ready, but its report was not written "
                       f"({type(error).__name__}: {error}); run `tokenmill report {config.destdir}`", err=True)
        else:
            if not quiet and not as_json:
                click.echo(f"report: {page} (open it in a browser)")


prepare_command = _SectionedCommand(
    "prepare",
    callback=_run,
    params=[
        _Option(["-c", "--config", "config_path"], type=click.Path(dir_okay=False), metavar="FILE",
                help="YAML file with any of the settings below, '_' for '-' (flags given override it).",
                section="Inputs"),
        *(option for option, _, _ in _OPTIONS),
        *peer_options(_Option, section=RUN),
        _Option(["--force"], is_flag=True, help="Redo every stage, even those already up to date."),
        _Option(["-q", "--quiet"], is_flag=True, help="No progress bars or logs; errors still print."),
        _Option(["--json", "as_json"], is_flag=True, help="Print the summary as JSON."),
        _Option(["--report/--no-report"], default=True, show_default=True,
                help="Write report.html into the output directory at the end (see tokenmill report)."),
        _Option(["--phase"], type=click.Choice(PHASES), default=None, section="Beyond one machine",
                help="Run one step of a run cut for a scheduler (what --engine slurm's jobs run): plan, "
                     "clean (with --task), tokenizer, encode (with --task), merge."),
        _Option(["--task"], type=click.IntRange(min=0), default=None, metavar="I", section="Beyond one machine",
                help="With --phase clean or encode: run task I of it (a Slurm array task's index)."),
        _Option(["--status", "show_status"], is_flag=True, section="Beyond one machine",
                help="Show the tasks done and left in each tasked stage, and exit."),
    ],
    short_help="Clean, tokenize and binarize parallel (or monolingual) text into fairseq/Megatron stores.",
    help=(
        "Clean, tokenize and binarize parallel (or monolingual) text into fairseq/Megatron stores.\n\n"
        "\b\nExample:\n  tokenmill prepare --source-lang en --target-lang zh --trainpref data/train \\\n"
        "    --validpref data/valid --destdir data-bin --vocab-size 8000 --joined-dictionary\n\n"
        "Every setting is checked, input files included, before any work starts. Re-running skips stages "
        "whose inputs and settings did not change."
    ),
)
