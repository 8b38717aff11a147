"""A run owns its output directory: staged outputs are put in place in one short step at the end.

Stages write under ``DESTDIR/.work/out``; nothing a reader sees in ``DESTDIR`` changes until every
stage has finished. Publishing then (1) removes ``manifest.json`` (a directory without one is
unfinished: ``verify`` says so), (2) hard-links every staged output into place (an atomic rename per
file; a copy where links are impossible), (3) removes every file of an earlier run that this run
does not produce — a valid/test split dropped from the settings, shards no longer written, another
tokenizer's model — and (4) writes the new manifest, which lists exactly this run's outputs.

A run that fails before that leaves the previous output as it was; a run killed inside it leaves
no manifest, and running it again finishes the job.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path

from tokenmill.errors import ConfigError, TokenmillError
from tokenmill.fsutil import TMP_MARKER, fsync_dir, temp_name, write_json
from tokenmill.store.layout import shard_dirs
from tokenmill.store.manifest import MANIFEST_NAME, Manifest, data_files, read_manifest

STAGING_DIR = "out"


def prune_staging(staging: Path, produced: Iterable[Path]) -> None:
    """Delete staged files that no stage of this run produced (outputs of earlier settings), then
    the folders left empty."""
    keep = {Path(p) for p in produced}
    if not staging.is_dir():
        return
    for path in sorted(staging.rglob("*"), reverse=True):  # children before their folders
        if path.is_file() and path not in keep:
            path.unlink()
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()


def owned_files(root: Path, staging: Path) -> set[str]:
    """Files of ``root`` that tokenmill wrote: listed in its manifest, or published from ``staging``
    by a run killed before its manifest was written."""
    owned: set[str] = set()
    if (root / MANIFEST_NAME).exists():
        try:
            owned.update(read_manifest(root).files)
        except TokenmillError:  # an unreadable manifest vouches for nothing; the staged names still count
            pass
    if staging.is_dir():
        owned.update(str(rel) for rel in data_files(staging))
    return owned


def check_owned(root: Path, staging: Path) -> None:
    """Refuse, before anything is written, a destination that holds files tokenmill did not write:
    publishing removes whatever the run does not produce, and a user's file must not be among them."""
    if not root.is_dir():
        return
    foreign = sorted(str(rel) for rel in data_files(root) if str(rel) not in owned_files(root, staging))
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise ConfigError(
            f"--destdir {root} holds files tokenmill did not write ({shown}); prepare owns its output "
            "directory and replaces what is in it: move them away or choose an empty --destdir"
        )


def _nothing() -> None:
    return None


def _link_into_place(source: Path, target: Path) -> None:
    """``target`` becomes ``source``'s content atomically (a hard link, else a copy)."""
    if target.exists() and os.path.samefile(source, target):
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_name(target)
    tmp.unlink(missing_ok=True)
    try:
        os.link(source, tmp)
    except OSError:
        shutil.copyfile(source, tmp)
    os.replace(tmp, target)


def publish(root: Path, staging: Path, manifest: Manifest, *, before_manifest: Callable[[], None] = _nothing) -> None:
    """Make ``root`` hold exactly the files of ``manifest`` (all staged in ``staging``), then write it.

    ``before_manifest`` runs when the files are in place and the manifest is not yet written (a test
    hook: the kill-and-rerun tests stop the process there)."""
    (root / MANIFEST_NAME).unlink(missing_ok=True)
    fsync_dir(root)
    for relative in manifest.files:
        _link_into_place(staging / relative, root / relative)
    for relative in data_files(root):
        if str(relative) not in manifest.files and TMP_MARKER not in relative.name:
            (root / relative).unlink()
    for folder in shard_dirs(root):  # any number of digits: shard1000 and on too
        if not any(folder.iterdir()):
            folder.rmdir()
    for folder in {(root / relative).parent for relative in manifest.files}:
        fsync_dir(folder)
    before_manifest()
    write_json(root / MANIFEST_NAME, manifest.to_json())
