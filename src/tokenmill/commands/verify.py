"""``tokenmill verify DIR``: recompute a directory's checksums and counts against its manifest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from tokenmill.errors import opening
from tokenmill.store.manifest import MANIFEST_NAME, read_manifest, verify_directory
from tokenmill.store.remote import fetch_all, is_url


class DirectoryOrURL(click.ParamType):
    """An existing directory, or a URL (``s3://``, ``gs://``, ``https://``) passed through as it is."""

    name = "directory"
    _local = click.Path(exists=True, file_okay=False)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        return value if is_url(value) else self._local.convert(value, param, ctx)


@click.command()
@click.argument("directory", type=DirectoryOrURL())
def verify(directory: str) -> None:
    """Check every file of DIRECTORY against its manifest.json (sizes, xxh3 checksums, store counts).

    DIRECTORY may be a URL (s3://bucket/data-bin, endpoint and credentials from the environment,
    e.g. AWS_ENDPOINT_URL): every file is fetched into the local cache, checked as it arrives, and
    the cached copy is verified. Prints each mismatch and exits with status 1 if there is any; a
    directory without a readable manifest.json is an error (status 2).
    """
    shown = directory
    if is_url(directory):
        directory = str(fetch_all(directory))
    fix = "verify checks a directory written by tokenmill prepare (its manifest.json lists the files)"
    with opening(Path(directory) / MANIFEST_NAME, "a tokenmill manifest", fix):
        read_manifest(directory)
    problems = verify_directory(directory)
    for problem in problems:
        click.echo(f"MISMATCH {problem}", err=True)
    if problems:
        raise SystemExit(1)
    click.echo(f"{shown}: OK")
