"""The last step: the staged outputs put in place with ``preprocess.log`` and ``manifest.json``.

Not a recorded stage (it runs every time and is quick): stale staged files are pruned, the dictionaries
copied into every shard folder (fairseq reads them from each data path), the log written, and the run's
outputs (and nothing else) published with their manifest (:mod:`tokenmill.prepare.publish`), then
uploaded when ``--destdir`` is a URL.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from tokenmill.fsutil import atomic_path, atomic_write
from tokenmill.prepare.config import RUN_ONLY
from tokenmill.prepare.crash import crash_point
from tokenmill.prepare.object_storage import publish_to
from tokenmill.prepare.publish import prune_staging, publish
from tokenmill.prepare.run.context import RunContext
from tokenmill.prepare.run.summary import jsonable
from tokenmill.prepare.stages.base import Stage
from tokenmill.prepare.tokenizing import stores_tokenizer_ids
from tokenmill.store.layout import shard_dirs
from tokenmill.store.manifest import build_manifest


def copy_into_shards(ctx: RunContext, files: list[Path]) -> list[Path]:
    """fairseq reads the dictionaries from every data path: a copy of each in every shard folder."""
    shards = shard_dirs(ctx.out)
    for shard in shards:
        for source in files:
            target = ctx.stage_file(shard / source.name)
            if not target.exists() or target.read_bytes() != source.read_bytes():
                with atomic_path(target) as tmp:
                    shutil.copyfile(source, tmp)
    return shards


def write_log(ctx: RunContext, title: str) -> None:
    with atomic_write(ctx.stage_file(ctx.out / "preprocess.log")) as handle:
        handle.write(f"{title}\n{ctx.summary.table()}\n")


def publish_run(ctx: RunContext, summary: dict[str, Any]) -> None:
    """Put this run's outputs (and nothing else) in place and write the manifest (see publish.py)."""
    settings = ctx.config.recorded()
    how = {name: settings.pop(name) for name in RUN_ONLY}
    manifest = build_manifest(
        ctx.out, settings=jsonable(settings), vocab=ctx.summary.vocab,
        summary=jsonable(summary), meanings=ctx.meanings,
        run={"stages": ctx.summary.stage_table(), "warnings": ctx.summary.warnings, **how,
             "encoders": ctx.summary.encoders, "tasks": ctx.task_table, "merge_seconds": ctx.merge_seconds},
    )
    publish(ctx.root, ctx.out, manifest, before_manifest=lambda: crash_point("publish:before-manifest"))
    if ctx.url:
        publish_to(ctx.url, ctx.root, ctx.config.engine.storage_options)


class PublishStage(Stage):
    """The publish step of a single-direction run (see the module's docstring)."""

    name = "publish"

    def execute(self, ctx: RunContext) -> dict[str, Any]:
        cfg = ctx.config
        prune_staging(ctx.out, ctx.produced)
        # stores of the tokenizer's own ids have no fairseq dictionary (the manifest names the model instead)
        dictionaries = [] if stores_tokenizer_ids(cfg) else sorted(
            {ctx.folder.dict_path(None if cfg.monolingual else lang) for lang in cfg.langs})
        copy_into_shards(ctx, dictionaries)
        src, tgt = cfg.inputs.source_lang, cfg.inputs.target_lang
        name = f"{src}-{tgt}" if tgt else f"{src} (monolingual)"
        write_log(ctx, f"tokenmill prepare: {name} -> {ctx.root}")
        publish_run(ctx, ctx.summary.to_dict())
        return {}
