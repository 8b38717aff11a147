"""Open the GPT samples (or the Megatron blend of them) a training run reads, from a directory and a few
settings: what ``tokenmill batches`` and ``tokenmill trace`` build from their ``--seq-length`` and ``--blend``
flags, so the commands plan exactly what the Python API plans for the same settings.

One dataset: the directory's language-model store of the split (its only store, or the one named after the
split, ``train``). A blend: the ``(weight, prefix)`` members, each prefix a store under the directory or a
path as given (as ``tokenmill report --blend`` takes them), all with the same sample settings.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tokenmill.cache import CacheLike
from tokenmill.data.blending import BlendedDataset
from tokenmill.data.gpt_dataset import GPTDataset, GPTDatasetConfig
from tokenmill.errors import ConfigError
from tokenmill.store.layout import describe
from tokenmill.store.reader import IndexedDataset


@dataclass(frozen=True)
class GPTSetup:
    """What decides a run's GPT samples: the sample settings, the blend (``(weight, prefix)`` each; empty:
    the directory's own store) and the blend's size (None: each weight a whole sample count)."""

    dataset: GPTDatasetConfig
    blend: tuple[tuple[float, str], ...] = ()
    blend_samples: int | None = None


def lm_store(directory: str | Path, split: str = "train") -> Path:
    """The language-model store of ``split`` in ``directory``: its only store, or the one named ``split``."""
    contents = describe(directory)
    if contents.kind not in ("monolingual", "megatron"):
        raise ConfigError(f"{contents.what()}: GPT samples (--seq-length) are cut from language-model data; "
                          "give a directory tokenmill prepare wrote without a target language")
    stores = [s for s in contents.stores if "/" not in s]
    chosen = stores if len(stores) == 1 else [s for s in stores if s == split]
    if len(chosen) != 1:
        raise ConfigError(f"{contents.what()}: which store is {split}? Name it with --blend 1 PREFIX (one of "
                          f"{', '.join(stores)}), or give --split")
    return Path(directory) / chosen[0]


def member_prefix(directory: str | Path, prefix: str) -> Path:
    """A blend member's store: ``prefix`` under ``directory`` when it is there, else ``prefix`` as given."""
    for path in (Path(directory) / prefix, Path(prefix)):
        if Path(f"{path}.idx").exists():
            return path
    raise ConfigError(f"--blend {prefix}: no token store {prefix}.bin/.idx in {directory} or from here "
                      "(give the prefix, without .bin/.idx)")


def gpt_source(directory: str | Path, setup: GPTSetup, *, split: str = "train",
               cache: CacheLike = True) -> GPTDataset | BlendedDataset:
    """The GPT dataset (or blend) ``setup`` describes over ``directory``'s stores."""
    if not setup.blend:
        if setup.blend_samples is not None:
            raise ConfigError("--blend-samples is the size of a blend: give the members with --blend WEIGHT PREFIX")
        return GPTDataset(IndexedDataset(lm_store(directory, split)), setup.dataset, cache=cache)
    members = [GPTDataset(IndexedDataset(member_prefix(directory, prefix)), setup.dataset, cache=cache)
               for _, prefix in setup.blend]
    return BlendedDataset(members, [weight for weight, _ in setup.blend], size=setup.blend_samples, cache=cache)


__all__ = ["GPTSetup", "gpt_source", "lm_store", "member_prefix"]
