"""tokenmill: raw text to training-ready token data, served to training with exact resume.

The common jobs need only this module: ``tokenmill.prepare(...)``, ``tokenmill.open(path)``,
``tokenmill.batches(...)`` (numpy) and ``tokenmill.loader(...)`` (PyTorch), with the configs they
take (``tokenmill.open("s3://bucket/data-bin")`` reads from object storage through a local cache).
The modules below (``tokenmill.store``, ``.data``, ``.batching``, ``.loader``, ``.vocab``) stay
available for everything else.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("tokenmill")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0+unknown"

from tokenmill.batching.config import BatchConfig
from tokenmill.batching.gpt_plan import GPTBatchConfig
from tokenmill.batching.packed_pairs import PackConfig
from tokenmill.data.blending import BlendedDataset
from tokenmill.data.gpt_dataset import GPTDataset, GPTDatasetConfig
from tokenmill.data.multi_langtok import LangTokConfig
from tokenmill.data.sampling import SamplingConfig
from tokenmill.errors import ConfigError, FormatError, TokenmillError
from tokenmill.front import batches, loader, open, prepare
from tokenmill.prepare import PrepareConfig, PrepareSummary
from tokenmill.store import IndexedDataset
from tokenmill.store.remote import RemoteOptions

__all__ = [
    "BatchConfig",
    "BlendedDataset",
    "ConfigError",
    "FormatError",
    "GPTBatchConfig",
    "GPTDataset",
    "GPTDatasetConfig",
    "IndexedDataset",
    "LangTokConfig",
    "PackConfig",
    "PrepareConfig",
    "PrepareSummary",
    "RemoteOptions",
    "SamplingConfig",
    "TokenmillError",
    "__version__",
    "batches",
    "loader",
    "open",
    "prepare",
]
