"""glibc heap settings for array-heavy autograd (applied once, at import).

Backward frees each node's saved arrays as it goes, while the gradients it computes allocate new ones of the
same sizes. With glibc's default (dynamic) thresholds the heap's free top is handed back to the OS as soon as
it exceeds twice the largest recent allocation, and every array allocated after that is faulted in and zeroed
again page by page: on a chain of (256, 256) float32 steps backward made 28,000 minor page faults and took 94 ms,
where the same arithmetic on retained memory takes 20 ms (bench/NOTES.md, "The C allocator"). A CNN step spent a
quarter of its time in such faults.

ember therefore fixes two thresholds: arrays up to 32 MiB come from the heap (larger ones keep their own
mapping, returned to the OS when freed), and the heap's free top is trimmed once it exceeds 128 MiB (then
down to glibc's small pad, so memory still returns to the OS after a large graph is freed). PyTorch's own
CPU tuning guide recommends a caching allocator (jemalloc, tcmalloc) for the same reason.

Not applied when the user already chose (any ``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``,
``MALLOC_TOP_PAD_`` or ``MALLOC_ARENA_*`` variable set), with ``EMBER_MALLOC_TUNING=0``, or off glibc.
"""
from __future__ import annotations

import os
import sys

MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 128 << 20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3   # glibc's mallopt parameter numbers

TUNED = False   # whether the settings above are in force (set by tune())


def tune() -> bool:
    """Apply the thresholds (once); return whether they are in force."""
    global TUNED
    if TUNED:
        return True
    if not sys.platform.startswith("linux") or os.environ.get("EMBER_MALLOC_TUNING", "1") == "0":
        return False
    if any(k.startswith("MALLOC_") for k in os.environ):
        return False   # the user tuned the allocator: theirs to decide
    try:
        import ctypes
        libc = ctypes.CDLL(None)
        if not hasattr(libc, "gnu_get_libc_version"):
            return False   # not glibc (musl's mallopt does nothing)
        mallopt = libc.mallopt
    except (ImportError, OSError, AttributeError):   # no ctypes in this build, or no C library to find
        return False
    # the mmap threshold first: setting either one turns off glibc's dynamic adjustment of both
    TUNED = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    return TUNED
