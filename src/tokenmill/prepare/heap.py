"""Hand the heap's free pages back to the system between the coordinator's stages.

A stage frees hundreds of MB of block-sized numpy temporaries. glibc keeps the freed memory in its
heap (its trim threshold rises with the largest block freed, up to 64 MB), where it counts in the
process's resident memory until something else reuses it. ``malloc_trim`` releases it. (Prepare
keeps its own copy of this call: it may not import the batching layer, which has one too.)
"""

from __future__ import annotations

import ctypes
import ctypes.util


def release_heap() -> None:
    """glibc's ``malloc_trim(0)``; a no-op where there is no glibc."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim(0)
    except (OSError, AttributeError):
        pass


__all__ = ["release_heap"]
