"""Libraries that make forking this process unsafe: one list for every place that forks (the report's
child, the clean and encode stages' worker pools)."""

from __future__ import annotations

FORK_SHY = ("ray", "grpc")
"""Libraries whose threads and connections a fork would copy (their fork handlers log or stall): loaded in
this process (a Ray driver), work that would fork stays in this process instead."""

__all__ = ["FORK_SHY"]
