"""The preprocessing pipeline: raw text to cleaned, tokenized, binarized training data."""

from tokenmill.prepare.config import PrepareConfig, build_config, load_yaml
from tokenmill.prepare.run.entry import prepare
from tokenmill.prepare.run.summary import PrepareSummary

__all__ = ["PrepareConfig", "PrepareSummary", "build_config", "load_yaml", "prepare"]
