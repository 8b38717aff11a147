"""The front door: the common jobs from ``import tokenmill``, without knowing the module tree.

    import tokenmill
    summary = tokenmill.prepare("examples/config.yaml", destdir="runs/bin")   # YAML, dict or PrepareConfig
    data = tokenmill.open("runs/bin")                   # the right dataset for what the directory holds
    data = tokenmill.open("s3://bucket/bin", storage_options={...})   # the same, read through a local cache
    for batch in tokenmill.batches(data, tokenmill.BatchConfig(max_tokens=4096)):   # numpy, exact state
        ...
    loader = tokenmill.loader(data, tokenmill.BatchConfig(max_tokens=4096))   # torch DataLoader, rank from
                                                                              # torch.distributed
The deep imports stay available; these functions only choose among them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tokenmill.batching.config import BatchConfig
from tokenmill.batching.gpt_plan import GPTBatchConfig
from tokenmill.batching.packed_pairs import PackConfig
from tokenmill.data.multi_langtok import LangTokConfig
from tokenmill.data.multi_pairs import MultiPairDataset
from tokenmill.data.pairs import PairDataset
from tokenmill.data.sampling import SamplingConfig
from tokenmill.errors import ConfigError
from tokenmill.loader import adapter
from tokenmill.loader.iterator import BatchIterator
from tokenmill.loader.make import Dataset, make_batches
from tokenmill.prepare import PrepareConfig, PrepareSummary, build_config, load_yaml
from tokenmill.prepare import prepare as run_prepare
from tokenmill.store import IndexedDataset
from tokenmill.store.layout import FolderContents, describe, parse_megatron_name, parse_store_name
from tokenmill.store.manifest import MANIFEST_NAME, read_manifest
from tokenmill.store.remote import RemoteOptions, is_url, open_remote


def prepare(
    config: PrepareConfig | dict[str, Any] | str | os.PathLike[str] | None = None,
    *,
    force: bool = False,
    progress: bool | None = None,
    **settings: Any,
) -> PrepareSummary:
    """Run ``tokenmill prepare``: ``config`` is a :class:`PrepareConfig`, a mapping of settings or a YAML
    file; keyword ``settings`` (the flag names with ``_``) override it. Everything is checked first."""
    if isinstance(config, PrepareConfig):
        if settings:
            config = build_config({**config.to_dict(), **settings})
        return run_prepare(config, force=force, progress=progress)
    if isinstance(config, str | os.PathLike):
        built = build_config(load_yaml(config), overrides=settings, config_file=config)
    else:
        built = build_config(dict(config or {}), overrides=settings)
    return run_prepare(built, force=force, progress=progress)


def open(
    path: str | os.PathLike[str] | list[str],
    split: str = "train",
    *,
    storage_options: dict[str, Any] | None = None,
    remote: RemoteOptions | None = None,
    **options: Any,
) -> Dataset:
    """The dataset a path holds: translation pairs of a prepared directory (:class:`PairDataset`), many
    directions of an Open-NLLB ``data_bin``, a fairseq ``a:b:c`` string or a list of folders
    (:class:`MultiPairDataset`), or one token store by its prefix (:class:`IndexedDataset`, e.g. a
    Megatron ``*_text_document``). ``options`` go to the dataset's own ``from_dir``.

    A URL (``s3://bucket/data-bin``, ``gs://``, ``https://``, any fsspec URL; or a list of them) is read
    through a local cache (:mod:`tokenmill.store.remote`): indices at once, the ``.bin`` files of
    ``split`` when opened, each checked against the manifest. ``storage_options`` go to fsspec
    (endpoint, credentials); ``remote`` sets the cache folder, retries and request size."""
    path = _local(path, split, storage_options, remote, options)
    if isinstance(path, list) or (isinstance(path, str) and ":" in path and not Path(path).exists()):
        return MultiPairDataset.from_dir(path, split, **options)
    contents = describe(path)
    if contents.kind not in ("store", "missing") and (contents.path / MANIFEST_NAME).exists():
        read_manifest(contents.path)  # a manifest that does not read as one is refused here, as verify refuses it
    return _OPENERS.get(contents.kind, _pairs)(contents, split, options)


def _local(
    path: str | os.PathLike[str] | list[str],
    split: str,
    storage_options: dict[str, Any] | None,
    remote: RemoteOptions | None,
    options: dict[str, Any],
) -> str | os.PathLike[str] | list[str]:
    """``path`` with each URL replaced by its cached local view (:func:`_fetched`); storage options and remote
    settings refused for a local path."""
    if isinstance(path, list) and any(is_url(p) for p in path):
        return [os.fspath(_fetched(p, split, storage_options, remote, options)) if is_url(p) else p for p in path]
    if is_url(path):
        return _fetched(str(path), split, storage_options, remote, options)
    if storage_options is not None or remote is not None:
        raise ConfigError(f"{path} is a local path: storage_options and remote apply to URLs (s3://, gs://, https://)")
    return path


def _pairs(contents: FolderContents, split: str, options: dict[str, Any]) -> Dataset:
    return PairDataset.from_dir(contents.path, split, **options)


def _many(contents: FolderContents, split: str, options: dict[str, Any]) -> Dataset:
    return MultiPairDataset.from_dir(contents.path, split, **options)


def _store(contents: FolderContents, split: str, options: dict[str, Any]) -> Dataset:
    return IndexedDataset(contents.path)


def _missing(contents: FolderContents, split: str, options: dict[str, Any]) -> Dataset:
    raise ConfigError(f"{contents.path}: no such directory or token store (give a prepared directory or a store "
                      "prefix)")


def _monolingual(contents: FolderContents, split: str, options: dict[str, Any]) -> Dataset:
    """The one store of ``split`` (or the one Megatron store) of a folder of language-model data."""
    chosen = [s for s in contents.stores if parse_megatron_name(s) is not None or _monolingual_split(s) == split]
    if len(chosen) == 1:
        return IndexedDataset(contents.path / chosen[0])
    raise ConfigError(f"{contents.path} holds monolingual stores {list(contents.stores)}: open one of them by its "
                      "prefix")


def _nothing(contents: FolderContents, split: str, options: dict[str, Any]) -> Dataset:
    raise ConfigError(f"{contents.what()}: nothing to open (give the directory tokenmill.prepare wrote, or a "
                      "store prefix)")


_OPENERS: dict[str, Callable[[FolderContents, str, dict[str, Any]], Dataset]] = {
    "store": _store,
    "missing": _missing,
    "multilingual": _many,
    "monolingual": _monolingual,
    "megatron": _monolingual,
    "text": _nothing,
    "empty": _nothing,
}
"""What :func:`open` makes of each kind of folder :func:`tokenmill.store.layout.describe` tells (any other
kind: translation pairs)."""


def _monolingual_split(store: str) -> str | None:
    """The split a monolingual store (``train``, ``shard000/train``) is named for, else None."""
    name = parse_store_name(store)
    return name.split if name is not None and name.src is None and name.lang is None else None


def _fetched(
    url: str,
    split: str,
    storage_options: dict[str, Any] | None,
    remote: RemoteOptions | None,
    options: dict[str, Any],
) -> Path:
    """The cached local view of ``url`` with what opening ``split`` (and ``options``' shard, directions or
    languages) reads fetched and checked."""
    return open_remote(
        url, split, storage_options, remote, shard=options.get("shard"), directions=options.get("directions"),
        src_lang=options.get("src_lang"), tgt_lang=options.get("tgt_lang"),
    )


def batches(
    data: Dataset | str | os.PathLike[str],
    config: BatchConfig | GPTBatchConfig | None = None,
    *,
    sampling: SamplingConfig | None = None,
    langtok: LangTokConfig | None = None,
    pack: PackConfig | None = None,
    split: str = "train",
    rank: int = 0,
    world_size: int = 1,
    **options: Any,
) -> BatchIterator:
    """Batches of one rank as numpy arrays, with ``state_dict``/``load_state_dict`` (any world size):
    pairs, a sampled mix of many directions (``sampling``; ``langtok`` when opening a path), either
    cut by a token budget (``config``) or packed into rows (``pack``: Tensor2Tensor's packed features),
    or Megatron GPT samples and blends (a :class:`GPTDataset` or :class:`BlendedDataset` with a
    :class:`GPTBatchConfig`: one micro batch per item, Megatron's consumed-samples order;
    ``consumed_samples=`` starts mid-run). ``options`` go to the iterator (``cache=``, ``collate=``...)."""
    if isinstance(data, str | os.PathLike):
        dataset = open(data, split, **({"langtok": langtok} if langtok is not None else {}))
    else:
        dataset = data
        if langtok is not None:
            raise ConfigError("langtok applies when a path is opened: give the path, or open it with "
                              "tokenmill.open(path, langtok=...)")
    if langtok is not None and not isinstance(dataset, MultiPairDataset):
        raise ConfigError("langtok applies to many translation directions; this data is not a multilingual data_bin")
    return make_batches(dataset, config, sampling=sampling, pack=pack, rank=rank, world_size=world_size, **options)


def loader(
    data: Dataset | str | os.PathLike[str],
    config: BatchConfig | GPTBatchConfig | None = None,
    *,
    sampling: SamplingConfig | None = None,
    langtok: LangTokConfig | None = None,
    pack: PackConfig | None = None,
    split: str = "train",
    rank: int | None = None,
    world_size: int | None = None,
    num_workers: int = 0,
    **options: Any,
) -> Any:
    """A PyTorch DataLoader of tensors over :func:`batches` (rank and world size from
    ``torch.distributed`` when not given), resumable with ``state_dict``/``load_state_dict``."""
    rank, world_size = adapter("rank_and_world")(rank, world_size)  # imports torch (or says how to install it)
    iterator = batches(data, config, sampling=sampling, langtok=langtok, pack=pack, split=split, rank=rank,
                       world_size=world_size, **options)
    return adapter("StatefulLoader")(iterator, num_workers=num_workers)
