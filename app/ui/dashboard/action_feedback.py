"""What the dashboard tells the operator about their own actions: that a load or unload began and when it is
done (a fast load is otherwise invisible), and a failure in one line that says where the rest is.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from app.services.core.router_types import ModelInfo, ModelState

FAILURE_LINE_MAX = 160  # characters of a failure's first line in a toast; the log has all of it
FORGET_AFTER = 1800.0  # seconds: a request older than this is not news when it finishes (nor kept for ever)


@dataclass
class _Pending:
    verb: str
    want: ModelState
    since: float
    moved: bool = False
    """Seen loading since it was asked for: a failure after that is this request's (before, an older one's)."""


class ActionNotices:
    """Loads and unloads asked for from the dashboard, until the model list shows them done."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._pending: dict[tuple[str, str], _Pending] = {}

    def began(self, verb: str, machine: str, model: str) -> str:
        """Note a load or unload just asked for; the words that say so."""
        want = ModelState.LOADED if verb == "load" else ModelState.UNLOADED
        self._pending[(machine, model)] = _Pending(verb, want, self._clock())
        return f"{verb}ing {model} on {machine}…"

    def refused(self, machine: str, model: str) -> None:
        """The request itself failed: that is said as a failure, not as done."""
        self._pending.pop((machine, model), None)

    def settled(self, machine: str, models: Iterable[ModelInfo]) -> list[str]:
        """Words for each pending action on `machine` that the list shows done. One that failed is dropped quietly
        (its failure is announced on its own), as is one gone from the list or older than FORGET_AFTER."""
        now = self._clock()
        states = {m.id: m.state for m in models}
        done: list[str] = []
        for key, p in list(self._pending.items()):
            if key[0] != machine:
                continue
            state = states.get(key[1])
            p.moved = p.moved or state is ModelState.LOADING
            over = state is None or (state is ModelState.FAILED and p.moved) or now - p.since >= FORGET_AFTER
            if state is p.want and not over:
                done.append(f"{key[1]} {p.verb}ed on {machine} ({now - p.since:.1f} s)")
            if over or state is p.want:
                del self._pending[key]
        return done


def one_line_failure(message: str, log_key: str | None) -> str:
    """A failure for a toast: its first line (bounded) and, where there is a log to read, the key that shows it.
    A model's failure carries its last log lines; fifteen of them covered half the screen."""
    lines = [ln for ln in message.strip().splitlines() if ln.strip()]
    first = lines[0].strip() if lines else "failed"
    if len(first) > FAILURE_LINE_MAX:
        first = first[: FAILURE_LINE_MAX - 1] + "…"
    return f"{first} · {log_key} for the log" if log_key else first
