"""The on-disk token store: indexed ``.bin``/``.idx`` files (fairseq and Megatron layouts) and manifests."""

from tokenmill.store.format import Layout, token_dtype
from tokenmill.store.reader import IndexedDataset
from tokenmill.store.writer import IndexedWriter, merge_stores

__all__ = ["IndexedDataset", "IndexedWriter", "Layout", "merge_stores", "token_dtype"]
