"""The output section: the store's layout and its shards."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, ClassVar

from tokenmill.prepare.config.kinds import LayoutName
from tokenmill.prepare.config.section import Section
from tokenmill.settings import Range


@dataclass(frozen=True)
class OutputSettings(Section):
    """How the binarized store is laid out (``--destdir`` is with the inputs, where the help lists it)."""

    TITLE: ClassVar[str] = "output"

    layout: LayoutName = field(
        default="fairseq",
        metadata={"help": "Store layout: fairseq (fairseq-train reads it) or megatron (megatron-core reads it)."},
    )
    shard_size: Annotated[int, Range(0, why="0 means no shards")] = field(
        default=0,
        metadata={"help": "Split train into shardNNN/ folders of at most this many pairs (0: no shards)."},
    )
