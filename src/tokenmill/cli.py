"""The ``tokenmill`` command line: a thin shell over the library, one module per sub-command.

Whatever is wrong with the input — tokenmill's own :class:`tokenmill.errors.TokenmillError`, a
usage error click finds (unknown option, bad choice, missing argument), a file that cannot be
read or written — is printed as exactly one ``error: ...`` line on stderr with exit status 2,
never a traceback (``TOKENMILL_DEBUG=1`` prints the traceback too, for a bug report). Usage errors end
with where to look: ``(see 'tokenmill prepare --help')``.
"""

from __future__ import annotations

import errno
import importlib
import os
import sys
from typing import Any

import click

from tokenmill._core.interruptible import abandoned
from tokenmill._version import __version__
from tokenmill.errors import TokenmillError

EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130
DEBUG_VARIABLE = "TOKENMILL_DEBUG"
"""Set to 1 to see the full traceback above an ``error:`` line."""

COMMANDS = {
    "batches": ("tokenmill.commands.batches", "batches"),
    "export": ("tokenmill.commands.export", "export"),
    "inspect": ("tokenmill.commands.inspect", "inspect"),
    "prepare": ("tokenmill.commands.prepare", "prepare_command"),
    "report": ("tokenmill.commands.report", "report"),
    "trace": ("tokenmill.commands.trace", "trace"),
    "verify": ("tokenmill.commands.verify", "verify"),
}
"""Each sub-command's module and object. A module is imported when its command runs, so a start pays
for the one command it runs."""

SUMMARIES = {
    "batches": "Show how DIRECTORY's SPLIT will be cut into batches for one epoch, per rank.",
    "export": "Write prepared data in another system's file format (Tensor2Tensor's TFRecords).",
    "inspect": "Show what a token store holds (header facts, length statistics, items) or list a directory's stores.",
    "prepare": "Clean, tokenize and binarize parallel (or monolingual) text into fairseq/Megatron stores.",
    "report": "Write one self-contained HTML page on DIRECTORY (a directory tokenmill prepare wrote).",
    "trace": "Show the input file, line and text of every row of one batch, or where one input line is served.",
    "verify": "Check every file of DIRECTORY against its manifest.json (sizes, xxh3 checksums, store counts).",
}
"""What ``tokenmill --help`` lists for each sub-command without importing it: the first paragraph of the
command's own help (a test keeps the two the same)."""


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _lower_first(text: str) -> str:
    """'No such option' -> 'no such option' (a word, not an acronym or a name)."""
    return text[0].lower() + text[1:] if text[:1].isupper() and text[1:2].islower() else text


def _click_message(error: click.ClickException) -> str:
    """A click error in tokenmill's words: the flag first, then what is wrong with it."""
    message = error.format_message()
    plain = isinstance(error, click.BadParameter) and not isinstance(error, click.MissingParameter)
    if plain and error.message:
        param = error.param
        hint = error.param_hint
        if hint is None and isinstance(param, click.Option) and param.opts:
            hint = max(param.opts, key=len)
        text = _lower_first(error.message)
        if not isinstance(hint, str) or isinstance(param, click.Argument):
            message = text  # an argument's message names it already ("directory 'x' does not exist")
        else:
            message = f"{hint}{' ' if text.startswith('must') else ': '}{text}"
    else:
        message = _lower_first(message)
    if isinstance(error, click.UsageError) and error.ctx is not None:
        message = f"{message.rstrip('.')} (see '{error.ctx.command_path} --help')"
    return _one_line(message)


def report(message: str) -> None:
    """Print one ``error:`` line on stderr; with ``TOKENMILL_DEBUG=1`` the full traceback first (for bug
    reports: where in tokenmill the error arose)."""
    if os.environ.get(DEBUG_VARIABLE, "") not in ("", "0"):
        import traceback  # only on this debug path: every other start of the CLI skips its import (~10 ms)

        traceback.print_exc()
    click.echo(f"error: {_one_line(message)}", err=True)


class _Group(click.Group):
    """A click group whose every failure on bad input is one ``error:`` line and exit status 2, and
    whose sub-commands are loaded by name from :data:`COMMANDS` when asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list of ``--help`` from :data:`SUMMARIES`: no sub-command module is imported."""
        rows = [(name, self.commands[name].get_short_help_str(formatter.width) if name in self.commands
                 else SUMMARIES[name]) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands or cmd_name not in COMMANDS:
            return super().get_command(ctx, cmd_name)
        module, name = COMMANDS[cmd_name]
        command: click.Command = getattr(importlib.import_module(module), name)
        if not command.short_help and command.help:  # the whole first paragraph, not click's 45 characters
            command.short_help = _one_line(command.help.split("\n\n", 1)[0])
        self.add_command(command, cmd_name)
        return command

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:  # type: ignore[override]
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)
        try:
            code = super().main(*args, standalone_mode=False, **kwargs)
        except click.ClickException as error:
            report(_click_message(error))
            sys.exit(EXIT_BAD_INPUT)
        except TokenmillError as error:
            report(str(error))
            sys.exit(EXIT_BAD_INPUT)
        except click.Abort as error:  # Ctrl-C exits 130 (128 + SIGINT), as a shell reports an interrupted command
            click.echo("Aborted!", err=True)
            status = EXIT_INTERRUPTED if isinstance(error.__context__, KeyboardInterrupt) else 1
            if abandoned():  # a native call still runs: exit now, as a killed run (see _core.interruptible)
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(status)
            sys.exit(status)
        except OSError as error:
            if error.errno == errno.EPIPE:  # output piped into `head`: stop quietly
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
                sys.exit(1)
            where = f"{error.filename}: " if error.filename else ""
            report(f"{where}{error.strerror or error}")
            sys.exit(EXIT_BAD_INPUT)
        sys.exit(code if isinstance(code, int) else 0)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, "-V", "--version", prog_name="tokenmill")
def cli() -> None:
    """tokenmill: raw text to training-ready token data, served to training with exact resume.

    \b
    Typical use:
      tokenmill prepare -c examples/config.yaml     # clean, tokenize, binarize
      tokenmill verify data-bin/                    # check files against manifest.json
      tokenmill inspect data-bin/train.en-de.de --range 0:3
      tokenmill batches data-bin --max-tokens 4096 --world-size 8   # what an epoch will be
      tokenmill export tfrecord data-bin t2t-data --problem my_problem   # Tensor2Tensor's files
    """


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``tokenmill`` console script and ``python -m tokenmill``."""
    cli.main(args=argv if argv is not None else sys.argv[1:], prog_name="tokenmill")
