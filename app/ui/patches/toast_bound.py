"""The notification backlog's bound: a storm of notices (a model failing in a loop on five machines, a flapping
link) shows the newest few and lets the older ones go, instead of stacking toasts past the screen's height, each a
widget with its own render caches, for as long as their timeouts run."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

# Bound: toasts kept at once; the oldest goes when another arrives. More than fit beside the log panel at 45 rows.
MAX_TOASTS = 6

T = TypeVar("T")


def beyond_bound(live: Iterable[T], keep: int = MAX_TOASTS) -> list[T]:
    """The oldest of `live` (oldest first, as Textual keeps them) past the newest `keep`."""
    items = list(live)
    return items[: max(0, len(items) - keep)]


def drop_oldest(live: Iterable[T], drop: Callable[[T], None], keep: int = MAX_TOASTS) -> int:
    """Drop what is past the bound; returns how many went."""
    gone = beyond_bound(live, keep)
    for n in gone:
        drop(n)
    return len(gone)
