"""``tokenmill prepare``: flags generated from :class:`~tokenmill.prepare.PrepareConfig` fields.

Every config field is a flag (``trainpref`` -> ``--trainpref``, booleans as ``--x/--no-x``);
normalizer fields keep their names (``--nfkc``), filter fields get a ``--filter-`` prefix
(``--filter-max-tokens``). A YAML file (``-c``) gives defaults; flags given on the command line
override it. The field docstrings are the help texts.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect as pyinspect
import logging
import sys
import time
import types
import typing
from typing import Any

import click

from tokenmill.prepare import PrepareConfig, build_config, load_yaml, prepare
from tokenmill.text.filters import FilterConfig
from tokenmill.text.normalize import Normalizer

_NESTED_PREFIX = {"normalize": "", "filters": "filter-"}


def _field_docs(cls: type) -> dict[str, str]:
    """Docstrings under dataclass fields, or the trailing ``# comment`` on the field's line."""
    source = pyinspect.getsource(cls)
    docs: dict[str, str] = {}
    tree = ast.parse(source)
    body = tree.body[0].body  # type: ignore[attr-defined]
    lines = source.splitlines()
    for i, node in enumerate(body):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            name = node.target.id
            following = body[i + 1] if i + 1 < len(body) else None
            if isinstance(following, ast.Expr) and isinstance(getattr(following, "value", None), ast.Constant):
                docs[name] = str(following.value.value).strip()
            elif "#" in lines[node.lineno - 1]:
                docs[name] = lines[node.lineno - 1].split("#", 1)[1].strip()
    return docs


def _click_type(annotation: Any) -> tuple[Any, bool]:
    """(click type, is_flag) for a field annotation."""
    hint = annotation
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        hint = args[0] if args else str
    origin = typing.get_origin(hint)
    if hint is bool:
        return None, True
    if hint is int:
        return int, False
    if hint is float:
        return float, False
    if origin is typing.Literal:
        return click.Choice([str(a) for a in typing.get_args(hint)]), False
    return str, False


def _options() -> list[tuple[click.Option, str, str | None]]:
    """(option, field name, nested group or None) for every config field."""
    made = []
    groups: list[tuple[type, str | None]] = [
        (PrepareConfig, None), (Normalizer, "normalize"), (FilterConfig, "filters"),
    ]
    for cls, group in groups:
        docs = _field_docs(cls)
        hints = typing.get_type_hints(cls)
        for item in dataclasses.fields(cls):
            if group is None and item.name in _NESTED_PREFIX:
                continue
            flag = (_NESTED_PREFIX[group] if group else "") + item.name.replace("_", "-")
            kind, is_flag = _click_type(hints[item.name])
            help_text = docs.get(item.name, "")
            if is_flag:
                option = click.Option([f"--{flag}/--no-{flag}", item.name if not group else f"{group}__{item.name}"],
                                      default=None, help=help_text)
            else:
                option = click.Option([f"--{flag}", item.name if not group else f"{group}__{item.name}"],
                                      type=kind, default=None, help=help_text)
            made.append((option, item.name, group))
    return made


_OPTIONS = _options()


def _run(config_path: str | None, force: bool, quiet: bool, as_json: bool, **given: Any) -> None:
    settings: dict[str, Any] = load_yaml(config_path) if config_path else {}
    settings = {key.replace("-", "_"): value for key, value in settings.items()}
    for _, name, group in _OPTIONS:
        value = given.get(name if not group else f"{group}__{name}")
        if value is None:
            continue
        if group:
            nested = settings.get(group) or {}
            settings[group] = {**nested, name: value}
        else:
            settings[name] = value
    config: PrepareConfig = build_config(settings)
    if not quiet:
        logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    started = time.perf_counter()
    summary = prepare(config, force=force, progress=None if not quiet else False)
    elapsed = time.perf_counter() - started
    if as_json:
        import json

        click.echo(json.dumps({**summary.to_dict(), "ran": summary.ran, "seconds": round(elapsed, 3)}))
    elif not quiet:
        click.echo(summary.table())
        click.echo(f"done in {elapsed:.1f}s: {len(summary.ran)} stages ran, {len(summary.skipped)} up to date; "
                   f"output in {config.destdir}")


prepare_command = click.Command(
    "prepare",
    callback=_run,
    params=[
        click.Option(["-c", "--config", "config_path"], type=click.Path(exists=True, dir_okay=False),
                     help="YAML file with any of the settings below (flags override it)."),
        click.Option(["--force"], is_flag=True, help="Redo every stage, even those already up to date."),
        click.Option(["-q", "--quiet"], is_flag=True, help="No progress bars or logs; errors still print."),
        click.Option(["--json", "as_json"], is_flag=True, help="Print the summary as JSON."),
        *(option for option, _, _ in _OPTIONS),
    ],
    help=(
        "Clean, tokenize and binarize parallel (or monolingual) text into fairseq/Megatron stores.\n\n"
        "\b\nExample:\n  tokenmill prepare --source-lang en --target-lang zh --trainpref data/train \\\n"
        "    --validpref data/valid --destdir data-bin --vocab-size 8000 --joined-dictionary\n\n"
        "Re-running skips stages whose inputs and settings did not change."
    ),
)
