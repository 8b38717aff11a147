"""``prepare(config)``: one entry point for single-direction, monolingual and many-direction runs."""

from __future__ import annotations

from tokenmill.errors import ConfigError
from tokenmill.prepare.config import PrepareConfig
from tokenmill.prepare.multilingual import MultilingualPipeline
from tokenmill.prepare.pipeline import Pipeline, PrepareSummary


def prepare(config: PrepareConfig, *, force: bool = False, progress: bool | None = None) -> PrepareSummary:
    """Run the whole pipeline; re-running skips stages whose inputs and settings did not change."""
    if not isinstance(config, PrepareConfig):
        raise ConfigError("prepare() takes a PrepareConfig (see tokenmill.prepare.build_config)")
    pipeline = MultilingualPipeline if config.multilingual else Pipeline
    return pipeline(config, force=force, progress=progress).run()
