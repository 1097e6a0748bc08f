"""What the operator has a hand on, for a scenario that plays beside them (`llamaherd demo --traffic`).

The dashboard notes each machine the operator acts on and whether a screen is open over it; the scenario, in its
own thread, leaves a machine alone for HANDS_OFF_SECONDS after the operator's last action there (the model acted
on, and the others too: a load beside it could evict it) and waits while a screen is open.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

HANDS_OFF_SECONDS = 300.0


class OperatorHands:
    """Thread-safe: the dashboard writes from its loop, the scenario reads from its own."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, hands_off: float = HANDS_OFF_SECONDS) -> None:
        self._clock = clock
        self._hands_off = hands_off
        self._lock = threading.Lock()
        self._touched: dict[str, float] = {}
        self._screen_open = False

    def touched(self, machine: str) -> None:
        """The operator acted on this machine (a load, unload, reload, start or stop) just now."""
        with self._lock:
            self._touched[machine] = self._clock()

    def set_screen_open(self, open_: bool) -> None:
        """A screen (an editor, help, a confirmation) is over the dashboard, or no longer."""
        with self._lock:
            self._screen_open = open_

    @property
    def screen_open(self) -> bool:
        with self._lock:
            return self._screen_open

    def hands_off(self, machine: str) -> bool:
        """Whether a scenario must leave this machine alone now."""
        with self._lock:
            at = self._touched.get(machine)
            return at is not None and self._clock() - at < self._hands_off
