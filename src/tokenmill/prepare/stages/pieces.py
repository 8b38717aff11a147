"""Stage ``pieces.{split}``: the token-count and ratio filters counted in the tokenizer's pieces (as fairseq's
max positions count them): a mask over a split's encoded items, applied when counting the dictionary and
binarizing, with the drops counted per filter. Only in runs with a subword tokenizer and such filters."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain
from typing import Any

import numpy as np

from tokenmill.prepare.encoded_parts import regrouped
from tokenmill.prepare.run.context import RunContext
from tokenmill.prepare.sequential import save_npy_blocks, size_blocks, store_length
from tokenmill.prepare.stages.base import Outputs, Stage
from tokenmill.prepare.stages.encoded import ITEMS_PER_BLOCK, encoded_prefixes
from tokenmill.prepare.state import fingerprint
from tokenmill.prepare.tokenizing import piece_filter
from tokenmill.text.filters import PairFilter
from tokenmill.text.stats import StepStats


class PiecesStage(Stage):
    """``pieces.{split}`` (see the module's docstring)."""

    def __init__(self, split: str) -> None:
        self.split = split
        self.name = f"pieces.{split}"

    def key(self, ctx: RunContext) -> str:
        upstream = [ctx.keys[f"encode.{self.split}.{lang}"] for lang in ctx.config.langs]
        return fingerprint("pieces", upstream, repr(piece_filter(ctx.config)))

    def run(self, ctx: RunContext) -> Outputs:
        sides = [encoded_prefixes(ctx, self.split, lang) for lang in ctx.config.langs]
        stats = StepStats("pieces")
        check = PairFilter(piece_filter(ctx.config))  # type: ignore[arg-type]

        def side_sizes(prefixes: list) -> Iterator[np.ndarray]:
            return regrouped(chain.from_iterable(size_blocks(p, ITEMS_PER_BLOCK) for p in prefixes), ITEMS_PER_BLOCK)

        def kept() -> Iterator[np.ndarray]:
            for block in zip(*(side_sizes(prefixes) for prefixes in sides), strict=True):
                placeholders = [[""] * len(block[0]) for _ in block]
                tokens = {"src_tokens": block[0], **({"tgt_tokens": block[1]} if len(block) > 1 else {})}
                yield check(placeholders[0], placeholders[1] if len(block) > 1 else None, stats=stats, **tokens).keep

        path = ctx.folder.keep_path(self.split)
        save_npy_blocks(path, kept(), sum(store_length(p) for p in sides[0]), np.dtype(bool))
        return [path], {"stats": dict(stats.counts)}

    def after(self, ctx: RunContext, info: dict[str, Any]) -> None:
        ctx.split_info(self.split).setdefault("clean", {})["pieces"] = info["stats"]
