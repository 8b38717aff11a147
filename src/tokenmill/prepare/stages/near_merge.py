"""The near-dedup side of ``clean.train``'s merge: clusters settled over the tasks' band keys, then each
part's near-duplicates added to the lines the part drops (its ``gone`` list: the one place a part's lines
are dropped, as for exact duplicates), counted, and offered to the drop sample with the kept item each
duplicates (``.work/dropped/{split}.near.json``: the audit pairs)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from tokenmill.fsutil import write_json
from tokenmill.prepare.near_dedup import drops_in, find_edges, near_settings, resolve_clusters
from tokenmill.prepare.run.context import RunContext
from tokenmill.prepare.stages.cleaned import cleaned_line
from tokenmill.prepare.tasks import TaskSet
from tokenmill.text.drop_sample import MAX_CHARS, DropSample, line_keys

REASON = "near_dedup"
Offer = Callable[[RunContext, Path, np.ndarray, DropSample, str], None]
"""Offers a part's dropped positions to the drop sample under a reason (``clean._sample_duplicates``)."""
Lines = Callable[[Path, str, np.ndarray], list[bytes]]
"""The lines of a part at sorted positions (``clean._part_lines``)."""


class NearClusters:
    """The clusters of one merge and what each part drops for them."""

    def __init__(self, out: Path, bases: np.ndarray, folders: list[Path], offer: Offer, lines: Lines) -> None:
        self.out, self.bases, self.folders = out, bases, folders
        self.offer, self.lines = offer, lines
        self.dropped = 0  # near-duplicates that exact dedup does not drop already
        self._kept: list[np.ndarray] = []  # the kept item of each, for the count of clusters
        self._audit: dict[int, int] = {}  # line number of a sample candidate -> global position of its kept item

    def add_part(self, ctx: RunContext, folder: Path, gone: np.ndarray, base: int, count: int,
                 sample: DropSample) -> np.ndarray:
        """The part's ``gone`` positions with its near-duplicates added (sorted); counts and samples them."""
        near, kept = drops_in(self.out, base, count)
        fresh = ~np.isin(near, gone)
        near, kept = near[fresh], kept[fresh]
        self.dropped += len(near)
        self._kept.append(kept)
        if len(near) and sample.size:
            self.offer(ctx, folder, near, sample, REASON)
            numbers = np.array(np.memmap(folder / "numbers.raw", dtype=np.int64, mode="r")[near])
            close = np.argsort(line_keys(numbers, sample.seed), kind="stable")[: sample.size]
            self._audit.update(zip(numbers[close].tolist(), kept[close].tolist(), strict=True))
        return np.union1d(gone, near).astype(np.int64)

    def stats(self, items: int) -> dict[str, int]:
        """The step's counts: items compared, near-duplicates dropped, clusters they came from."""
        clusters = len(np.unique(np.concatenate(self._kept))) if self._kept else 0
        return {"items": items, "near_duplicates": self.dropped, "clusters": clusters}

    def write_audit(self, ctx: RunContext, sample: DropSample, path: Path) -> None:
        """The sampled near-duplicates with the item each duplicates (``line``, ``kept_line``, texts)."""
        rows = []
        for item in sample.get(REASON):
            where = int(self._audit[item["line"]])
            part = int(np.searchsorted(self.bases, where, side="right")) - 1
            position = np.array([where - int(self.bases[part])])
            folder = self.folders[part]
            line = int(np.memmap(folder / "numbers.raw", dtype=np.int64, mode="r")[position[0]])
            kept = [_clip(cleaned_line(ctx, self.lines(folder, lang, position)[0])) for lang in ctx.config.langs]
            rows.append({**item, "kept_line": line, "kept_src": kept[0],
                         "kept_tgt": kept[1] if len(kept) > 1 else None})
        write_json(path, rows)


def _clip(text: str) -> str:
    """Cut as the drop sample cuts its texts (:data:`~tokenmill.text.drop_sample.MAX_CHARS`)."""
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1] + "…"


def near_clusters(ctx: RunContext, folders: list[Path], bases: np.ndarray, tasks: TaskSet, offer: Offer,
                  lines: Lines) -> NearClusters | None:
    """Settle the clusters of the clean tasks' band keys (None without ``--near-dedup``)."""
    settings = near_settings(ctx.config)
    if settings is None:
        return None
    out = tasks.root / "near"
    partitions = int(tasks.plan()["near_partitions"])
    find_edges(folders, bases[:-1].tolist(), partitions, settings.bands, out)
    resolve_clusters(out)
    return NearClusters(out, bases, folders, offer, lines)


def audit_path(dropped: Path) -> Path:
    """Where the audit pairs of a split's near-duplicates go, beside its drop sample."""
    return dropped.with_name(f"{dropped.stem}.near.json")


__all__ = ["REASON", "NearClusters", "audit_path", "near_clusters"]
