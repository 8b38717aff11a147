"""The ``tokenmill`` command line: a thin shell over the library, one module per sub-command.

Bad input raises :class:`tokenmill.errors.TokenmillError`; it is printed as one ``error:`` line
with exit status 2 instead of a traceback.
"""

from __future__ import annotations

import sys

import click

from tokenmill import __version__
from tokenmill.commands.batches import batches
from tokenmill.commands.inspect import inspect
from tokenmill.commands.prepare import prepare_command
from tokenmill.commands.verify import verify
from tokenmill.errors import TokenmillError


class _Group(click.Group):
    """A click group that turns tokenmill's own errors into one readable line."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except TokenmillError as error:
            click.echo(f"error: {error}", err=True)
            ctx.exit(2)


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
    """


cli.add_command(prepare_command)
cli.add_command(verify)
cli.add_command(batches)
cli.add_command(inspect)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``tokenmill`` console script and ``python -m tokenmill``."""
    cli.main(args=argv if argv is not None else sys.argv[1:], prog_name="tokenmill")
