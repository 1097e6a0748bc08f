"""Sizes that do not jitter on every load: table columns, machine cards.

A loading model's status cell ("loading  42% ██▌·· · requested · 00:06") is wider than a loaded one's, so on a busy
router the status column widened on each load and narrowed on each unload: every column right of it jumped, and
each change drew every line of the table again (52 full repaints in 3 minutes of the soak's cycle). Here a column
widens at once and narrows only when nothing has needed its width for HOLD_SECONDS, or at once when the held width
no longer fits the table's room (at 80 columns the badge pushed "source" off the screen). A new machine, a filter or
a resize fits the widths exactly again.

A machine card grew lines for a model's failure and lost them when the model moved on (every 15 s in the soak's
cycle): each change of height is a layout and a repaint of the whole screen. That room is held the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

HOLD_SECONDS = 20.0


def table_width(widths: Sequence[int]) -> int:
    return sum(widths) + 2 * len(widths)  # one cell of padding each side


class SizeHold:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.held: list[int] = []
        self._needed_at = 0.0  # the last time every held width was what the rows needed

    def reset(self, want: Sequence[int]) -> list[int]:
        self.held = list(want)
        self._needed_at = self._clock()
        return self.held

    def widths(self, want: Sequence[int], room: int) -> list[int]:
        """The widths to draw at, for rows that need `want`."""
        held = [max(w, h) for w, h in zip(want, self.held, strict=False)]
        if len(self.held) != len(want) or held == list(want) or table_width(held) > room:
            return self.reset(want)
        self.held = held
        return held

    def due_in(self) -> float:
        """Seconds until the held widths may narrow (0: now)."""
        return max(0.0, self._needed_at + HOLD_SECONDS - self._clock())
