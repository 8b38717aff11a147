"""Settings of a report: the batching preview, the sampling temperatures, the LM sequence length."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tokenmill.batching.config import MODES
from tokenmill.errors import ConfigError

DEFAULT_TEMPERATURES = (1.0, 5.0, 100.0)


@dataclass(frozen=True)
class ReportOptions:
    """What the report previews; every default is what training would use without flags."""

    max_tokens: int = 4096
    """Token budget per batch and side for the batching preview."""
    world_size: int = 1
    """Ranks the preview deals batches to."""
    mode: str = "lowpad"
    """Batching mode shown in detail (the padding of every mode is shown beside it)."""
    pack_length: int | None = None
    """Row length of the packed preview; None: the next power of two above the 99th percentile length."""
    temperatures: tuple[float, ...] = DEFAULT_TEMPERATURES
    """Sampling temperatures shown for many directions; the first one drives the batching preview."""
    seq_length: int = 2048
    """LM data: tokens per GPT sample."""
    blend: tuple[tuple[float, str], ...] = ()
    """LM data: (weight, store prefix) of each dataset of a Megatron blend to preview."""
    blend_samples: int | None = None
    """Samples of the blend (None: one epoch of every dataset together)."""
    token_sample: int = 2_000_000
    """Tokens read per store to count token frequencies (all of them when the store is smaller)."""
    verify: bool = True
    """Recompute the checksums (``tokenmill verify``) for the overview."""
    seed: int = 1
    """Seed of the batching order and of the token sample."""
    max_plotted_parts: int = 24
    """Many directions: length plots for at most this many (direction, split) parts; tables for all."""

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ConfigError(f"--mode {self.mode!r}: choose one of {', '.join(MODES)}")
        for name in ("max_tokens", "world_size", "seq_length", "token_sample"):
            if int(getattr(self, name)) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.seq_length < 2:
            raise ConfigError(f"seq_length must be at least 2 tokens, got {self.seq_length}")
        if self.pack_length is not None and self.pack_length < 1:
            raise ConfigError(f"pack_length must be >= 1, got {self.pack_length}")
        if not self.temperatures or any(t <= 0 for t in self.temperatures):
            raise ConfigError(f"temperatures must be > 0, got {list(self.temperatures)}")
        if any(w <= 0 for w, _ in self.blend):
            raise ConfigError("blend weights must be > 0")

    def to_dict(self) -> dict[str, Any]:
        """JSON-able settings, as they appear in the report."""
        return {
            "max_tokens": self.max_tokens,
            "world_size": self.world_size,
            "mode": self.mode,
            "pack_length": self.pack_length,
            "temperatures": list(self.temperatures),
            "seq_length": self.seq_length,
            "blend": [[w, p] for w, p in self.blend],
            "blend_samples": self.blend_samples,
            "token_sample": self.token_sample,
            "verify": self.verify,
            "seed": self.seed,
        }


__all__ = ["DEFAULT_TEMPERATURES", "ReportOptions"]
