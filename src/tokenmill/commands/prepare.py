"""``tokenmill prepare``: flags made from the settings of :class:`~tokenmill.prepare.PrepareConfig`.

Every setting (a field of one of its sections, named by its key) is a flag (``trainpref`` ->
``--trainpref``, booleans as ``--x/--no-x``); normalizer fields keep their names (``--nfkc``), filter
fields get a ``--filter-`` prefix (``--filter-max-tokens``). A YAML file (``-c``) gives defaults; flags
given on the command line override it. One source of truth: a field's type hint gives the flag's type
(``Literal`` fields are choices), its ``metadata["help"]`` the help text, its default the shown default,
and its section's title (:data:`~tokenmill.prepare.config.SECTIONS`) the section of ``--help`` it is listed
in. Nothing is read from source files, so ``--help`` works from a zipped or bytecode-only install.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import click

from tokenmill.commands.messages import KeptWarnings, capture_warnings, release, warning_lines
from tokenmill.commands.params import click_type
from tokenmill.commands.peer_flags import apply_peer_flags, peer_options
from tokenmill.prepare import PrepareConfig, PrepareSummary, build_config, load_yaml, prepare
from tokenmill.prepare.config import NESTED, SETTINGS, field_help, field_sections, flag_name
from tokenmill.prepare.engines import engine_part
from tokenmill.prepare.object_storage import upload_file
from tokenmill.prepare.pipeline import PHASES
from tokenmill.prepare.run import run_task, status, write_slurm_script
from tokenmill.settings import hints, is_sequence
from tokenmill.store.remote import is_url

RUN = "Run"


def _sentence(text: str) -> str:
    """One help style: whitespace collapsed, a capital first letter, a period at the end."""
    text = " ".join(text.split())
    if not text:
        return text
    if text[0].islower() and (len(text) == 1 or text[1].islower() or text[1] == " "):
        text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."


def _help_text(group: str | None, item: dataclasses.Field, flag: str) -> str:  # type: ignore[type-arg]
    """A field flag's ``--help``: the field's help text (:func:`~tokenmill.prepare.config.field_help`, read
    from the class, never its source file) in one style, and the default it shows."""
    text = _sentence(field_help(group, item))
    shown = _shown_default(item, flag)
    return f"{text}  [default: {shown}]" if shown is not None else text


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
    """(option, setting key, nested group or None) for every setting, in the sections' order; the fields of a
    nested group (normalize, filters) take the place and section of the group's setting."""
    sections = {key: title[:1].upper() + title[1:] for key, title in field_sections().items()}
    made: list[tuple[click.Option, str, str | None]] = []
    for setting in SETTINGS:
        if setting.key not in NESTED:
            hint = hints(setting.owner)[setting.name]
            made.append((_option(setting.key, setting.field, hint, None, sections[setting.key]), setting.key, None))
            continue
        group, kind = setting.key, NESTED[setting.key]
        hinted = hints(kind)
        for item in dataclasses.fields(kind):
            made.append((_option(item.name, item, hinted[item.name], group, sections[group]), item.name, group))
    return made


def _option(key: str, item: dataclasses.Field, hint: Any, group: str | None, section: str) -> click.Option:  # type: ignore[type-arg]
    """The flag of one setting (``--x/--no-x`` for a boolean)."""
    flag = flag_name(key, group)[2:]
    kind, is_flag = click_type(hint)
    dest = key if not group else f"{group}__{key}"
    described = {"help": _help_text(group, item, flag), "section": section}
    if is_flag:
        return _Option([f"--{flag}/--no-{flag}", dest], default=None, **described)
    metavar = "A,B,..." if is_sequence(hint) else None
    return _Option([f"--{flag}", dest], type=kind, default=None, metavar=metavar, **described)


_OPTIONS = _options()


def _run(
    config_path: str | None, force: bool, quiet: bool, as_json: bool, report: bool, phase: str | None,
    task: int | None, show_status: bool, **given: Any,
) -> None:
    config = _config(config_path, given)
    kept = capture_warnings(quiet)  # logs and warnings on stderr (warnings kept for the summary's end)
    try:
        _execute(config, kept, force=force, quiet=quiet, as_json=as_json, report=report, phase=phase, task=task,
                 show_status=show_status)
    finally:
        release(kept)


def _config(config_path: str | None, given: dict[str, Any]) -> PrepareConfig:
    """The run's settings: the YAML file's, overridden by the flags given."""
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
    return build_config(settings, overrides=overrides, config_file=config_path)


def _execute(
    config: PrepareConfig, kept: KeptWarnings, *, force: bool, quiet: bool, as_json: bool, report: bool,
    phase: str | None, task: int | None, show_status: bool,
) -> None:
    """Show the status, run one task, write the Slurm script, or run (a phase of) prepare and print its
    summary: the counts, stage times and warnings (with ``quiet``, the counts and warnings only)."""
    if show_status:
        click.echo(status(config))
        return
    if task is not None or phase in ("clean", "encode"):
        _one_task(config, phase, task, quiet)
        return
    if engine_part(config.engine.name).scheduled and phase is None:  # the engine runs as scheduler jobs: their script
        script = write_slurm_script(config)
        click.echo(f"wrote {script}: submit it with `bash {script}` on a Slurm login node; "
                   f"progress: tokenmill prepare -c {script.parent / 'config.yaml'} --status")
        return
    started = time.perf_counter()
    summary = prepare(config, force=force, progress=None if not quiet else False, phase=phase)
    late = warning_lines(kept, summary.warnings)
    if phase not in (None, "merge"):
        if not quiet:
            click.echo(f"phase {phase} done; tasks: {status(config)}")
        return
    elapsed = time.perf_counter() - started
    if as_json:
        click.echo(json.dumps({**summary.to_dict(), "ran": summary.ran, "seconds": round(elapsed, 3)}))
    elif not quiet:
        click.echo("\n".join([summary.report(), *late]))
        click.echo(f"done in {elapsed:.1f}s: {len(summary.ran)} stages ran, {len(summary.skipped)} up to date; "
                   f"output in {config.inputs.destdir}")
    else:  # quiet: no logs or progress, but the counts and every warning
        click.echo("\n".join([summary.table(), *(f"warning: {m}" for m in summary.warnings), *late]))
    if report:
        _write_page(config, summary, shown=not quiet and not as_json)


def _one_task(config: PrepareConfig, phase: str | None, task: int | None, quiet: bool) -> None:
    """``--phase clean|encode --task I``: run task I of that phase, one line per stage unless ``quiet``."""
    if task is None or phase not in ("clean", "encode"):
        raise click.UsageError("--task I goes with --phase clean or --phase encode (one task of that phase)")
    for record in run_task(config, phase, task):
        if quiet:
            continue
        if record.get("merged"):
            click.echo(f"task {task} ({phase}): {record['stage']} is already merged; nothing to do")
        else:
            click.echo(f"task {task} ({phase}): {record['lines']:,} lines in {record['seconds']:.1f}s")


def _write_page(config: PrepareConfig, summary: PrepareSummary, *, shown: bool) -> None:
    """Write report.html (uploaded beside the data for a URL destdir); a failure is a warning, not an error:
    the data is prepared and verified, the page is extra. The report's modules (its batching preview pulls in
    the data, batching and loader packages) are imported here, when a page is written: ``--no-report`` and a
    failed run do not pay for them (about a sixth of the command's start-up)."""
    from tokenmill.report import write_report

    try:
        page, _ = write_report(summary.destdir)  # the local folder (a URL destdir is worked on locally)
        if is_url(config.inputs.destdir):
            page = upload_file(config.inputs.destdir, Path(page), config.engine.storage_options)
    except Exception as error:  # the data is prepared and verified; the page is extra
        click.echo(f"warning: {config.inputs.destdir} is ready, but its report was not written "
                   f"({type(error).__name__}: {error}); run `tokenmill report {config.inputs.destdir}`", err=True)
    else:
        if shown:
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
        _Option(["-q", "--quiet"], is_flag=True,
                help="No progress bars or logs: only the summary's counts and warnings (errors still print)."),
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
