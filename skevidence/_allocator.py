"""Keep glibc's allocator from returning the engine's working memory to the OS after every step.

The engine allocates and frees tensors of a few hundred kilobytes to a
few megabytes at every gradient step (``[n_particles, n_classes,
batch_size]`` scores). glibc's ``malloc`` serves them from its heap and,
once more than its trim threshold lies free at the top, hands that memory
back to the OS, so the next step page-faults it in again, and the page
faults, not the arithmetic, dominate the time of a fit of small tensors
(see the benchmarks page, docs/benchmarks.rst). Raising the
trim and mmap thresholds once per process, as ``MALLOC_TRIM_THRESHOLD_``
and ``MALLOC_MMAP_THRESHOLD_`` would, keeps up to :data:`TRIM_THRESHOLD`
bytes of freed memory for reuse. Other C libraries, and a process that
set either variable itself or ``SKEVIDENCE_MALLOC_TUNING=0``, are left
alone.
"""

import ctypes
import ctypes.util
import os
import sys
import threading

__all__ = ["tune_allocator"]

# Freed memory kept for reuse at the top of the heap, and the size from
# which allocations bypass the heap (mapped and unmapped each time).
TRIM_THRESHOLD = 64 << 20
MMAP_THRESHOLD = 16 << 20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt parameters (malloc.h)

_done = False
_lock = threading.Lock()


def _wanted():
    if not sys.platform.startswith("linux"):
        return False
    if os.environ.get("SKEVIDENCE_MALLOC_TUNING", "1").strip() == "0":
        return False
    # The user's own settings win.
    return not any(name in os.environ
                   for name in ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_"))


def tune_allocator():
    """Raise glibc's trim and mmap thresholds, once per process (no-op elsewhere)."""
    global _done
    if _done:
        return
    with _lock:
        if _done:
            return
        _done = True
        if not _wanted():
            return
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            mallopt = libc.mallopt
        except (OSError, AttributeError):  # not glibc (musl, ...): nothing to tune
            return
        mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
        mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
