"""LiveFeed's pacing on a clock the test steps by hand: keys go first, a change waits at most MAX_DEFER.

The dashboard test drives the same rule through Textual, where a loaded machine stretches every key press; here the
timings are exact, so the bounds can be asserted to the millisecond.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Callable

from app.services.core.fleet_events import ModelsChanged
from app.ui.live import FLUSH_INTERVAL, INPUT_QUIET, MAX_DEFER, TIMER_SLACK, LiveFeed
from app.ui.state.herd_state import Changes, HerdState
from tests.helpers.standin_fleet import workstation_models


class SteppedClock:
    """A monotonic clock and a timer queue: `run_until(t)` fires every timer due by t, in order."""

    def __init__(self) -> None:
        self.t = 100.0
        self._timers: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = 0

    def __call__(self) -> float:
        return self.t

    def later(self, delay: float, callback: Callable[[], None]) -> None:
        self._seq += 1
        heapq.heappush(self._timers, (self.t + max(0.0, delay), self._seq, callback))

    def run_until(self, t: float) -> None:
        while self._timers and self._timers[0][0] <= t:
            due, _, cb = heapq.heappop(self._timers)
            self.t = max(self.t, due)
            cb()
        self.t = max(self.t, t)


def feed_on(clock: SteppedClock) -> tuple[LiveFeed, list[float]]:
    painted_at: list[float] = []

    def paint(_: Changes) -> None:
        painted_at.append(clock.t)

    feed = LiveFeed(
        HerdState(["workstation"]),
        paint,
        clock.later,
        lambda cb: clock.later(0.0, cb),
        clock=lambda: 0.0,
        monotonic=clock,
    )
    return feed, painted_at


def a_change(size: int) -> ModelsChanged:
    models = tuple(dataclasses.replace(m, size=size) if m.id == "mistral-7b" else m for m in workstation_models())
    return ModelsChanged("workstation", models)


def test_without_keys_a_change_is_painted_within_one_flush_interval() -> None:
    clock = SteppedClock()
    feed, painted_at = feed_on(clock)
    feed.absorb([a_change(1)])  # the first paint may go at once: none went before it
    clock.run_until(clock.t + 1.0)
    start = clock.t
    feed.absorb([a_change(2)])
    clock.run_until(start + 1.0)
    assert len(painted_at) == 2
    assert painted_at[1] - start <= FLUSH_INTERVAL + 1e-9


def test_a_key_holds_a_paint_back_for_the_quiet_time() -> None:
    clock = SteppedClock()
    feed, painted_at = feed_on(clock)
    feed.absorb([a_change(1)])
    clock.run_until(clock.t + 1.0)
    start = clock.t
    feed.note_input()
    feed.absorb([a_change(2)])
    clock.run_until(start + 1.0)
    assert abs(painted_at[-1] - start - INPUT_QUIET) <= TIMER_SLACK + 1e-9


def test_keys_pressed_without_pause_never_hold_a_change_back_longer_than_max_defer() -> None:
    clock = SteppedClock()
    feed, painted_at = feed_on(clock)
    feed.absorb([a_change(1)])
    clock.run_until(clock.t + 1.0)
    start = clock.t
    feed.note_input()
    feed.absorb([a_change(2)])
    for i in range(1, 41):  # a key every 20 ms for 0.8 s: longer than the deferral
        clock.run_until(start + i * 0.02)
        feed.note_input()
    assert len(painted_at) == 2, "the change was never painted while keys were pressed"
    assert painted_at[1] - start <= MAX_DEFER + 1e-9
    assert painted_at[1] - start >= MAX_DEFER - 0.02 - 1e-9, "painted before the keys had their quiet time"


def test_a_burst_of_changes_is_one_paint_per_interval() -> None:
    clock = SteppedClock()
    feed, painted_at = feed_on(clock)
    feed.absorb([a_change(1)])
    clock.run_until(clock.t + 1.0)
    start = clock.t
    for i in range(300):  # 300 sizes in 0.3 s: sizes are not states, so they coalesce
        feed.absorb([a_change(i + 2)])
        clock.run_until(start + (i + 1) * 0.001)
    clock.run_until(start + 1.0)
    assert 2 <= len(painted_at) - 1 <= int(0.3 / FLUSH_INTERVAL) + 2
