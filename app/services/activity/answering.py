"""Which loaded models have stopped answering, from what the activity poll already asks (no request of its own).

A wedged child (or a stopped one) looks fine to the router: /models lists it `loaded` and /health is the router's
own answer; but every request proxied to it (/metrics, /slots, /props, completions) hangs without a byte. The poll
asks /metrics; a model listed loaded whose /metrics goes unanswered within the bound SILENT_ROUNDS rounds in a
row is "not answering" (one silence is not enough: /metrics is served by the child's main loop, between two decode
steps, and one long prompt batch on a slow CPU can hold it for seconds). The first answer after that is "answering
again". A refusal (400: it went between the list and the poll) is an answer, not a silence.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from app.services.core.fleet_events import AnsweringChanged

SILENT_ROUNDS = 2


@dataclass
class AnsweringWatch:
    silent_rounds: int = SILENT_ROUNDS
    _silences: dict[tuple[str, str], int] = field(default_factory=dict)
    _flagged: set[tuple[str, str]] = field(default_factory=set)

    def is_suspect(self, machine: str, model: str) -> bool:
        """Silent last time it was asked: asked again every round (not every IDLE_ROUNDS) until it answers."""
        return (machine, model) in self._silences

    def not_answering(self, machine: str) -> tuple[str, ...]:
        return tuple(sorted(m for (mach, m) in self._flagged if mach == machine))

    def silent(self, machine: str, model: str, bound: float) -> AnsweringChanged | None:
        key = (machine, model)
        n = self._silences.get(key, 0) + 1
        self._silences[key] = n
        if n >= self.silent_rounds and key not in self._flagged:
            self._flagged.add(key)
            reason = f"loaded, but its /metrics went unanswered within {bound:g} s, {n} times in a row"
            return AnsweringChanged(machine, model, False, reason)
        return None

    def probe_failed(self, machine: str, model: str, reason: str) -> AnsweringChanged | None:
        """A one-token probe got no answer within its bound: a completion, not a gauge, so once is enough."""
        key = (machine, model)
        self._silences[key] = self._silences.get(key, 0) + 1
        if key in self._flagged:
            return None
        self._flagged.add(key)
        return AnsweringChanged(machine, model, False, f"loaded, but a one-token probe: {reason}")

    def answered(self, machine: str, model: str) -> AnsweringChanged | None:
        key = (machine, model)
        self._silences.pop(key, None)
        if key in self._flagged:
            self._flagged.discard(key)
            return AnsweringChanged(machine, model, True)
        return None

    def forget_except(self, live: set[tuple[str, str]]) -> list[AnsweringChanged]:
        """Models no longer polled (unloaded, asleep, their router gone): their silences are dropped; a flagged one
        is no longer said to be not answering (it is not loaded: nothing to answer), told once."""
        gone = [k for k in self._flagged if k not in live]
        for k in [k for k in self._silences if k not in live]:
            del self._silences[k]
        for k in gone:
            self._flagged.discard(k)
        return [AnsweringChanged(m, model, True, "no longer loaded") for (m, model) in sorted(gone)]
