"""A clock a test steps by hand (no wall-clock waits in tests)."""

from __future__ import annotations


class SteppedClock:
    def __init__(self, t: float = 1000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t
