"""From fleet events to paints: fold every event into HerdState at once, paint at most every FLUSH_INTERVAL.

Coalescing may merge many updates into one paint, but never one state of a model into the next: a tiny model is
"loading" for 25 ms, and an operator who pressed `l` must see it. When an event would replace a state change that
has not been painted yet, what is pending is painted first and the rest waits for that refresh. In a burst this
rarely happens: it takes the same model changing twice within one interval.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator

from app.services.core.fleet_events import FleetEvent, ModelsChanged, ModelsUpdated
from app.ui.malloc_trim import BIG_LIST, give_back
from app.ui.state.herd_state import Changes, HerdState

FLUSH_INTERVAL = 0.05  # at most 20 paints a second from fleet events, however fast they come
# Keys first: a fleet paint that reorders or widens the table draws every visible line again, so during a burst a
# key press waited for that paint and then for its own. Fleet paints wait INPUT_QUIET after a key,
# but never hold a change back longer than MAX_DEFER.
INPUT_QUIET = 0.12
MAX_DEFER = 0.3
# A timer that fires a hair early (timer granularity, float rounding) counts as on time, rather than rescheduling
# itself for microseconds.
TIMER_SLACK = 0.001

Later = Callable[[float, Callable[[], None]], None]


class LiveFeed:
    def __init__(
        self,
        state: HerdState,
        paint: Callable[[Changes], None],
        later: Later,
        after_paint: Callable[[Callable[[], None]], object],
        clock: Callable[[], float],
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.state = state
        self.paint = paint
        self.later = later
        self.after_paint = after_paint
        self.clock = clock
        self.monotonic = monotonic
        """For the pacing of paints; a test steps it by hand."""
        self.flushes = 0
        self._pending = Changes()
        self._backlog: deque[FleetEvent] = deque()
        self._awaiting_paint = False
        self._flush_due = False
        self._last_flush = 0.0
        self._input_at = -1.0
        self._due_since = 0.0
        self._trim_due = False
        self._unpainted: dict[str, set[str]] = {}
        """Per machine, the models whose state changed since the last paint."""

    def note_input(self) -> None:
        """A key was pressed: let its paint go first."""
        self._input_at = self.monotonic()

    def absorb(self, events: Iterable[FleetEvent]) -> None:
        self._backlog.extend(events)
        if not self._awaiting_paint:
            self._drain()

    def flush(self) -> None:
        self._flush_due = False
        self._last_flush = self.monotonic()
        self._unpainted.clear()
        changes, self._pending = self._pending, Changes()
        if changes:
            self.flushes += 1
            self.paint(changes)
        if self._trim_due:
            self._trim_due = False
            self.after_paint(give_back)  # the big list's decoded reply is garbage by now

    # ---- inside ----

    def _drain(self) -> None:
        self._awaiting_paint = False
        now = self.clock()
        while self._backlog:
            ev = self._backlog[0]
            if isinstance(ev, ModelsChanged | ModelsUpdated) and self._hides_a_state(ev):
                self.flush()
                self._awaiting_paint = True
                self.after_paint(self._drain)
                return
            self._backlog.popleft()
            if isinstance(ev, ModelsChanged | ModelsUpdated):
                self._note_transitions(ev)
                self._trim_due = self._trim_due or (isinstance(ev, ModelsChanged) and len(ev.models) >= BIG_LIST)
            self._pending = self._pending.merge(self.state.apply([ev], now))
        if self._pending:  # events that change nothing shown (a download's own progress events) ask for no paint
            self._schedule_flush()

    def _schedule_flush(self) -> None:
        if self._flush_due:
            return
        self._flush_due = True
        self._due_since = self.monotonic()
        self.later(max(0.0, self._last_flush + FLUSH_INTERVAL - self._due_since), self._timed_flush)

    def _timed_flush(self) -> None:
        # Wait while keys are being pressed, but never past MAX_DEFER from when the paint fell due.
        wait = min(self._input_at + INPUT_QUIET, self._due_since + MAX_DEFER) - self.monotonic()
        if wait > TIMER_SLACK:
            self.later(wait, self._timed_flush)
            return
        if self._flush_due:
            self.flush()

    def _changed_states(self, ev: ModelsChanged | ModelsUpdated) -> Iterator[str]:
        if isinstance(ev, ModelsUpdated):
            known = self.state.get(ev.machine).by_id
            for n in ev.models:
                o = known.get(n.id)
                if o is None or o.state is not n.state or o.failed != n.failed:
                    yield n.id
            return
        before = self.state.get(ev.machine).models
        if len(before) == len(ev.models):
            # The fleet hands back the same objects for models that did not change: identity first, cheaply.
            pairs = [(o, n) for o, n in zip(before, ev.models, strict=True) if o is not n]
            if all(o.id == n.id for o, n in pairs):
                yield from (n.id for o, n in pairs if o.state is not n.state or o.failed != n.failed)
                return
        old = {m.id: (m.state, m.failed) for m in before}
        yield from (m.id for m in ev.models if old.get(m.id) != (m.state, m.failed))

    def _hides_a_state(self, ev: ModelsChanged | ModelsUpdated) -> bool:
        unpainted = self._unpainted.get(ev.machine)
        if not unpainted:
            return False
        return any(mid in unpainted for mid in self._changed_states(ev))

    def _note_transitions(self, ev: ModelsChanged | ModelsUpdated) -> None:
        changed = set(self._changed_states(ev))
        if changed:
            self._unpainted.setdefault(ev.machine, set()).update(changed)
