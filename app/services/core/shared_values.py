"""One object per equal value, for values that many long-lived records hold (status texts, table cells, the ints
of log lines): the first one seen is kept and handed out again. Bounded: a table that reaches its bound is emptied
and starts over, so ever-new values (a hostile log, a huge models directory) cost at most the bound, and values are
then merely not shared for a while."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

H = TypeVar("H", bound=Hashable)


class SharedValues(Generic[H]):
    def __init__(self, bound: int) -> None:
        self.bound = bound
        self._kept: dict[H, H] = {}

    def __len__(self) -> int:
        return len(self._kept)

    def __call__(self, value: H) -> H:
        hit = self._kept.get(value)
        if hit is not None:
            return hit
        if len(self._kept) >= self.bound:
            self._kept.clear()
        self._kept[value] = value
        return value
