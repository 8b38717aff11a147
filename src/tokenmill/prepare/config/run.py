"""The run section: threads, the seed, batch sizes and the encoder (how a run goes, mostly not what it makes)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Annotated, ClassVar

from tokenmill.prepare.config.kinds import AtLeast0, AtLeast1, Encoder
from tokenmill.prepare.config.section import Section

_ENCODER_HELP = (
    "auto: encode with the fast encoder (pip install 'tokenmill[fast]') where it supports the model, proven on a "
    "sample of each run's documents (other ids: the tokenizer's own library, with a warning); reference: always the "
    "tokenizer's own library; fast: the fast encoder or an error."
)
_CHECK_HELP = (
    "Random documents in the sample that proves the fast encoder (besides the longest ones, ones in other scripts "
    "and ones holding special-token text)."
)


@dataclass(frozen=True)
class RunSettings(Section):
    """Threads, the sampling seed, the tokenizer's batch size and the encoder's choice."""

    TITLE: ClassVar[str] = "run"

    workers: Annotated[int, AtLeast1] = field(
        default_factory=lambda: os.cpu_count() or 1,
        metadata={"help": "Tokenizer threads (default: all cores)."},
    )
    seed: Annotated[int, AtLeast0] = field(default=1, metadata={"help": "Seed of the tokenizer's training sample."})
    chunk_lines: Annotated[int, AtLeast1] = field(
        default=65536,
        metadata={"help": "Lines per batch handed to the tokenizer."},
    )
    encoder: Encoder = field(default="auto", metadata={"help": _ENCODER_HELP})
    encoder_check_docs: Annotated[int, AtLeast0] = field(default=1000, metadata={"help": _CHECK_HELP})
