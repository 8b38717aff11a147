"""Several token stores read end to end as one, each part repeated a whole number of times."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tokenmill.errors import ConfigError
from tokenmill.store import IndexedDataset


class ConcatStore:
    """Token stores end to end as one store, the first ``repeats[0]`` times, the next ``repeats[1]`` ...

    fairseq's ``ConcatDataset(datasets, sample_ratios)`` for whole-number ratios: item ``g`` is item
    ``(g - start[p]) mod len(parts[p])`` of the part ``p`` whose range holds ``g``, so a repeated
    part comes back whole, then again. Offers what :class:`PairDataset` reads from a store:
    ``len``, ``sizes``, ``gather``, ``dtype``, ``prefix`` (a description for messages).
    """

    def __init__(self, parts: Sequence[IndexedDataset], repeats: Sequence[int] | None = None) -> None:
        if not parts:
            raise ConfigError("a concatenated store needs at least one part")
        repeats = [1] * len(parts) if repeats is None else [int(r) for r in repeats]
        if len(repeats) != len(parts) or any(r < 1 for r in repeats):
            raise ConfigError(f"repeats {repeats} must give each of the {len(parts)} parts a count >= 1")
        self.parts = list(parts)
        self.repeats = repeats
        self.real_sizes = np.asarray([len(part) for part in self.parts], dtype=np.int64)
        self.starts = np.zeros(len(self.parts) + 1, dtype=np.int64)
        np.cumsum(self.real_sizes * np.asarray(repeats, dtype=np.int64), out=self.starts[1:])
        self.sizes: np.ndarray = np.concatenate(
            [np.tile(part.sizes, r) for part, r in zip(self.parts, repeats, strict=True)]
        ).astype(np.int32, copy=False)
        self.dtype = np.result_type(*(part.dtype for part in self.parts))
        self.prefix = " + ".join(
            f"{part.prefix}" + (f" (x{r})" if r > 1 else "") for part, r in zip(self.parts, repeats, strict=True)
        )

    def __len__(self) -> int:
        return int(self.starts[-1])

    @property
    def prefixes(self) -> list[str]:
        return [str(part.prefix) for part in self.parts]

    def locate(self, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(part, item within the part) of each id in ``indices``."""
        indices = np.asarray(indices, dtype=np.int64).reshape(-1)
        n = len(self)
        if indices.size and (int(indices.min()) < -n or int(indices.max()) >= n):
            raise IndexError(f"gather index out of range for {self.prefix} with {n} items")
        indices = np.where(indices < 0, indices + n, indices)
        part = np.searchsorted(self.starts, indices, side="right") - 1
        return part, (indices - self.starts[part]) % self.real_sizes[part]

    def gather(self, indices: np.ndarray | list[int]) -> tuple[np.ndarray, np.ndarray]:
        """Items ``indices`` as (flat tokens, int64 offsets of length n+1): one read per part touched."""
        part, local = self.locate(np.asarray(indices))
        if len(part) and int(part.min()) == int(part.max()):
            tokens, offsets = self.parts[int(part[0])].gather(local)
            return tokens.astype(self.dtype, copy=False), offsets
        lengths = np.zeros(len(part), dtype=np.int64)
        pieces = []
        for p in np.unique(part).tolist():
            rows = np.flatnonzero(part == p)
            tokens, offsets = self.parts[p].gather(local[rows])
            lengths[rows] = np.diff(offsets)
            pieces.append((rows, tokens, offsets))
        out_offsets = np.zeros(len(part) + 1, dtype=np.int64)
        np.cumsum(lengths, out=out_offsets[1:])
        out = np.empty(int(out_offsets[-1]), dtype=self.dtype)
        for rows, tokens, offsets in pieces:
            row_lengths = np.diff(offsets)
            dest = np.arange(len(tokens), dtype=np.int64) + np.repeat(out_offsets[rows] - offsets[:-1], row_lengths)
            out[dest] = tokens
        return out, out_offsets

    def __repr__(self) -> str:
        return f"ConcatStore({self.prefix!r}, items={len(self)})"


Store = IndexedDataset | ConcatStore
"""What a side of a :class:`PairDataset` reads: one store, or several end to end."""
