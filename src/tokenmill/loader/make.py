"""The one function that makes the batch iterator of any dataset.

:func:`make_batches` is what ``tokenmill.batches``, ``tokenmill.loader``, the torch adapter's
``make_loader``, ``multilingual_batches``, ``tokenmill batches``, the report, the trace and the TensorFlow and
Grain adapters (which take its iterator) all build on: it picks by the dataset's kind among translation pairs of
one direction, a sampled mix of many directions, packed rows of either, and Megatron GPT samples or blends, and
refuses the mismatched settings with one message saying what fits.
"""

from __future__ import annotations

from typing import Any

from tokenmill.batching.collate import CollateOptions
from tokenmill.batching.config import BatchConfig
from tokenmill.batching.gpt_plan import GPTBatchConfig
from tokenmill.batching.multi_collate import MultiCollate
from tokenmill.batching.packed_collate import collate_packed
from tokenmill.batching.packed_pairs import PackConfig, PackedPairPlanner
from tokenmill.batching.sampled import SampledMix, SampledPlanner
from tokenmill.batching.scheduled import ScheduledPlanner
from tokenmill.cache import array_cache
from tokenmill.data.blending import BlendedDataset
from tokenmill.data.gpt_dataset import GPTDataset
from tokenmill.data.multi_pairs import MultiPairDataset
from tokenmill.data.pairs import PairDataset
from tokenmill.data.sampling import SamplingConfig
from tokenmill.errors import ConfigError
from tokenmill.loader.iterator import BatchIterator, PlannerLike, gpt_batches
from tokenmill.store import IndexedDataset

Dataset = PairDataset | MultiPairDataset | IndexedDataset | GPTDataset | BlendedDataset
"""What :func:`make_batches` batches (``tokenmill.open`` returns one of them)."""


def make_batches(
    dataset: Dataset,
    config: BatchConfig | GPTBatchConfig | None = None,
    *,
    sampling: SamplingConfig | None = None,
    pack: PackConfig | None = None,
    rank: int = 0,
    world_size: int = 1,
    **options: Any,
) -> BatchIterator:
    """Batches of rank ``rank`` of ``world_size`` over ``dataset``: pairs cut by a token budget
    (``config``), a sampled mix of many directions (``sampling``), packed rows of either (``pack``), or
    GPT micro batches (a :class:`GPTDataset`/:class:`BlendedDataset` with a :class:`GPTBatchConfig`).
    ``options`` go to the iterator (``cache=``, ``collate=``, ``infinite=``, ``consumed_samples=``...)."""
    if isinstance(dataset, GPTDataset | BlendedDataset):
        return _gpt(dataset, config, sampling, pack, rank, world_size, options)
    if isinstance(config, GPTBatchConfig):
        raise ConfigError(
            "a GPTBatchConfig batches GPT samples: give a tokenmill.GPTDataset (or BlendedDataset) over the store"
        )
    if pack is not None:
        return _packed(dataset, config, pack, sampling, rank, world_size, options)
    if isinstance(dataset, MultiPairDataset):
        return _mix(dataset, config, sampling, rank, world_size, options)
    if isinstance(dataset, IndexedDataset):
        raise ConfigError(
            f"{dataset.prefix} is one token store (language-model data): wrap it in "
            "tokenmill.GPTDataset(store, tokenmill.GPTDatasetConfig(seq_length=...)) and batch that with a "
            "tokenmill.GPTBatchConfig"
        )
    if sampling is not None:
        raise ConfigError("sampling applies to many directions; this is one direction")
    return BatchIterator(dataset, config, rank=rank, world_size=world_size, **options)


def _gpt(
    dataset: GPTDataset | BlendedDataset,
    config: BatchConfig | GPTBatchConfig | None,
    sampling: SamplingConfig | None,
    pack: PackConfig | None,
    rank: int,
    world_size: int,
    options: dict[str, Any],
) -> BatchIterator:
    """Megatron GPT micro batches: one per item, in Megatron's consumed-samples order."""
    if sampling is not None or pack is not None:
        raise ConfigError("sampling, langtok and pack apply to translation pairs; GPT samples are packed already")
    unknown = sorted(set(options) - {"consumed_samples", "infinite", "cache"})
    if unknown:
        raise ConfigError(f"GPT batches take consumed_samples= and infinite=, not {unknown}")
    options.pop("cache", None)  # GPT plans are closed-form: nothing to cache (the GPTDataset caches its index)
    if not isinstance(config, GPTBatchConfig):
        raise ConfigError(
            "GPT samples need a tokenmill.GPTBatchConfig(global_batch_size=..., micro_batch_size=...), "
            f"got {type(config).__name__}"
        )
    return gpt_batches(dataset, config, rank=rank, world_size=world_size, **options)


def _packed(
    dataset: PairDataset | MultiPairDataset | IndexedDataset,
    config: BatchConfig | None,
    pack: PackConfig,
    sampling: SamplingConfig | None,
    rank: int,
    world_size: int,
    options: dict[str, Any],
) -> BatchIterator:
    """Packed rows of one direction or of a sampled mix of many (any selection with the packed cut)."""
    if config is not None:
        raise ConfigError("give config= or pack=, not both: packed batches take their budget from PackConfig")
    if isinstance(dataset, IndexedDataset):
        raise ConfigError(f"{dataset.prefix} is language-model data: pack it with tokenmill.GPTDataset")
    if sampling is not None and not isinstance(dataset, MultiPairDataset):
        raise ConfigError("sampling applies to many directions; this is one direction")
    fixed = sampling and sampling.at_step(0)  # a weights schedule plans from its first mix
    selection = SampledMix(dataset, fixed) if isinstance(dataset, MultiPairDataset) else None
    planner = PackedPairPlanner(dataset, pack, selection=selection, world_size=world_size,  # type: ignore[arg-type]
                                cache=options.pop("cache", True))
    options.setdefault("collate", collate_packed)
    return BatchIterator(dataset, rank=rank, world_size=world_size,  # type: ignore[arg-type]
                         planner=_following_the_step(planner, sampling), **options)


def _mix(
    dataset: MultiPairDataset,
    config: BatchConfig | None,
    sampling: SamplingConfig | None,
    rank: int,
    world_size: int,
    options: dict[str, Any],
) -> BatchIterator:
    """A sampled mix of many directions cut by ``config``'s budget; a named collate (``"fairseq"``, the default,
    or ``"opennmt"``) gives each row's ``direction`` too."""
    config = config or BatchConfig()
    planner = SampledPlanner(dataset, config, sampling and sampling.at_step(0), world_size=world_size,
                             cache=array_cache(options.get("cache", True)))
    collate = options.pop("collate", "fairseq")
    collate_options = options.pop("collate_options", None)
    if isinstance(collate, str):
        collate = MultiCollate(collate, collate_options or CollateOptions(pad_to_multiple=config.pad_to_multiple))
    return BatchIterator(dataset, config, rank=rank, world_size=world_size, collate=collate,  # type: ignore[arg-type]
                         planner=_following_the_step(planner, sampling), **options)


def _following_the_step(planner: PlannerLike, sampling: SamplingConfig | None) -> PlannerLike:
    """``planner``, or for weights that follow the training step (a schedule), the chain of its mixes."""
    if sampling is not None and sampling.schedule is not None:
        return ScheduledPlanner(planner, sampling)  # type: ignore[arg-type]
    return planner


__all__ = ["Dataset", "make_batches"]
