"""``tokenmill verify DIR``: recompute a directory's checksums and counts against its manifest."""

from __future__ import annotations

from pathlib import Path

import click

from tokenmill.errors import opening
from tokenmill.store.manifest import read_manifest, verify_directory


@click.command()
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
def verify(directory: str) -> None:
    """Check every file of DIRECTORY against its manifest.json (sizes, xxh3 checksums, store counts).

    Prints each mismatch and exits with status 1 if there is any; a directory without a readable
    manifest.json is an error (status 2).
    """
    fix = "verify checks a directory written by tokenmill prepare (its manifest.json lists the files)"
    with opening(Path(directory) / "manifest.json", "a tokenmill manifest", fix):
        read_manifest(directory)
    problems = verify_directory(directory)
    for problem in problems:
        click.echo(f"MISMATCH {problem}", err=True)
    if problems:
        raise SystemExit(1)
    click.echo(f"{directory}: OK")
