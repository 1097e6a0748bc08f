"""Giving freed memory back to the system after a big model list.

A router's list of 20,000 models is an 11.6 MB reply, decoded into ~60 MB of objects that are dropped once parsed;
glibc keeps the freed heap for later instead of returning it (its mmap threshold rises after big frees), so the
dashboard stayed ~8 MB larger for good (bench/ui_size: 140 -> 132 MB after the first paint at 20,000 models).
`malloc_trim` hands it back; it costs a few ms, and is asked only after a list this big was painted.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable

BIG_LIST = 5000
"""A list of at least this many models is followed by a trim."""


def _malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        trim: Callable[[int], int] = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        return None
    return trim


_TRIM = _malloc_trim()


def give_back() -> None:
    """Return the heap's free memory to the system, where the C library can (glibc); otherwise nothing."""
    if _TRIM is not None:
        _TRIM(0)
