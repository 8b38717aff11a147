"""A ready batch iterator over a sampled mix of translation directions (one call for the common job: open a
data_bin and batch it with :func:`~tokenmill.loader.make.make_batches`)."""

from __future__ import annotations

from typing import Any

from tokenmill.batching.collate import CollateOptions
from tokenmill.batching.config import BatchConfig
from tokenmill.cache import CacheLike
from tokenmill.data.multi_langtok import LangTokConfig
from tokenmill.data.multi_layout import DataPaths
from tokenmill.data.multi_pairs import MultiPairDataset
from tokenmill.data.pairs import PairOptions
from tokenmill.data.sampling import SamplingConfig
from tokenmill.errors import ConfigError
from tokenmill.loader.iterator import BatchIterator
from tokenmill.loader.make import make_batches


def multilingual_batches(
    data: MultiPairDataset | DataPaths,
    config: BatchConfig | None = None,
    sampling: SamplingConfig | None = None,
    langtok: LangTokConfig | None = None,
    *,
    split: str = "train",
    directions: list[str] | None = None,
    options: PairOptions | None = None,
    rank: int = 0,
    world_size: int = 1,
    collate: str | Any = "fairseq",
    collate_options: CollateOptions | None = None,
    update_freq: int = 1,
    infinite: bool = False,
    cache: CacheLike = True,
    epoch: int = 1,
) -> BatchIterator:
    """A ready :class:`~tokenmill.loader.BatchIterator` over a sampled multilingual mix.

    ``data``: a :class:`MultiPairDataset` or what :meth:`MultiPairDataset.from_dir` opens (then
    ``split``, ``directions``, ``langtok`` and ``options`` apply). ``collate``: ``"fairseq"`` or
    ``"opennmt"`` (batches carry each row's ``direction``), None (ids) or a callable. The
    iterator's ``state_dict``/``load_state_dict`` resume exactly, on any rank and worker count.
    """
    if isinstance(data, MultiPairDataset):
        if langtok is not None or options is not None or directions is not None:
            raise ConfigError("langtok, options and directions apply when a data_bin is opened: give its path, or "
                              "open the dataset with them (MultiPairDataset.from_dir)")
        dataset = data
    else:
        dataset = MultiPairDataset.from_dir(data, split, directions, langtok=langtok, options=options)
    return make_batches(dataset, config, sampling=sampling, rank=rank, world_size=world_size, collate=collate,
                        collate_options=collate_options, update_freq=update_freq, infinite=infinite, cache=cache,
                        epoch=epoch)


__all__ = ["multilingual_batches"]
