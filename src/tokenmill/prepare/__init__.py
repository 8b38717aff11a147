"""The preprocessing pipeline: raw text to cleaned, tokenized, binarized training data."""

from tokenmill.prepare.config import PrepareConfig, build_config, load_yaml
from tokenmill.prepare.pipeline import PrepareSummary
from tokenmill.prepare.run import prepare

__all__ = ["PrepareConfig", "PrepareSummary", "build_config", "load_yaml", "prepare"]
