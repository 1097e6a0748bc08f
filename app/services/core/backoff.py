"""Reconnect delays: 0.5 s doubling to a 15 s cap, back to 0.5 s after a success."""

from __future__ import annotations


class Backoff:
    def __init__(self, first: float = 0.5, cap: float = 15.0) -> None:
        self.first = first
        self.cap = cap
        self._next = first

    def next(self) -> float:
        delay = self._next
        self._next = min(self._next * 2, self.cap)
        return delay

    def reset(self) -> None:
        self._next = self.first
