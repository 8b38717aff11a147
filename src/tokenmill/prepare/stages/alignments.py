"""Stage ``binarize.{split}.align``: ``{split}.align.{src}-{tgt}.bin/.idx`` (fairseq's name) from the cleaned
word alignments: flat int64 ``s0 t0 s1 t1 ...`` per pair. Only in runs with ``--align-suffix``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from operator import methodcaller
from pathlib import Path

import numpy as np

from tokenmill.errors import FormatError
from tokenmill.prepare.run.context import RunContext
from tokenmill.prepare.stages.base import Outputs, Stage
from tokenmill.prepare.stages.split_store import write_split
from tokenmill.prepare.state import fingerprint
from tokenmill.store.layout import align_name
from tokenmill.text import open_source

_PHARAOH = re.compile(r"(?:\d+-\d+(?: \d+-\d+)*)?")


class AlignmentsStage(Stage):
    """``binarize.{split}.align`` (see the module's docstring)."""

    def __init__(self, split: str) -> None:
        self.split = split
        self.name = f"binarize.{split}.align"

    def key(self, ctx: RunContext) -> str:
        output = ctx.config.output
        return fingerprint("alignments", ctx.keys[f"clean.{self.split}"], output.layout, output.shard_size)

    def run(self, ctx: RunContext) -> Outputs:
        cfg = ctx.config
        name = align_name(self.split, cfg.inputs.source_lang, cfg.inputs.target_lang)  # type: ignore[arg-type]
        path = ctx.folder.clean_path(self.split, "align")
        return write_split(ctx, self.split, lambda shard: ctx.folder.staged(name, shard), np.dtype(np.int64),
                           alignment_blocks(path), eos=None, unk=-1, crash_name=self.name)


def alignment_blocks(path: Path) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Pharaoh lines (``0-0 1-2``) of a cleaned file as (flat s/t positions, values per line) blocks."""
    for chunk in open_source([str(path)]).chunks():
        lines = chunk.src
        pairs = np.fromiter(map(methodcaller("count", "-"), lines), dtype=np.int64, count=len(lines))
        fields = " ".join(lines).replace("-", " ").split()
        try:
            flat = np.array(fields, dtype=np.int64) if fields else np.empty(0, dtype=np.int64)
        except ValueError:
            flat = None
        if flat is None or len(flat) != 2 * int(pairs.sum()) or (len(flat) and int(flat.min()) < 0):
            bad = next(i for i, line in enumerate(lines) if not _PHARAOH.fullmatch(line))
            raise FormatError(
                f"{path}: line {chunk.start + bad + 1} of the cleaned alignments is not Pharaoh 'i-j i-j ...': "
                f"{lines[bad][:80]!r}; fix the --align-suffix file (one line per sentence pair)"
            )
        yield flat, 2 * pairs
