"""A model that keeps failing by another's hand is toasted once a minute, not on every failure.

A client retrying a broken model every few seconds made a toast each time: each one mounted and later removed a
widget, two layouts of the whole screen (~15 % of the dashboard's CPU in the soak's cycle, which fails a model every
15 s), and a stack of identical toasts hid the ones that differed. Every failure is still on the model's row (its
reason and time) and in the history. A load or unload the operator starts here makes that model's next failure
toasted again at once: an answer to their own action is never held back.
"""

from __future__ import annotations

import time
from collections.abc import Callable

QUIET_SECONDS = 60.0
MAX_KEPT = 256  # models remembered; past it, the ones whose quiet time is over are forgotten


class RepeatedFailures:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._toasted: dict[tuple[str, str], float] = {}

    def quiet(self, machine: str, model: str) -> bool:
        """True when this model's failure was toasted less than QUIET_SECONDS ago (then it is not toasted now)."""
        now = self._clock()
        last = self._toasted.get((machine, model))
        if last is not None and now - last < QUIET_SECONDS:
            return True
        self._toasted[(machine, model)] = now
        if len(self._toasted) > MAX_KEPT:
            self._toasted = {k: t for k, t in self._toasted.items() if now - t < QUIET_SECONDS}
        return False

    def forget(self, machine: str, model: str) -> None:
        self._toasted.pop((machine, model), None)

    def __len__(self) -> int:
        return len(self._toasted)
