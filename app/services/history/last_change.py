"""Each model's last recorded transition, kept in memory for the model table ("evicted for chat-big · 14:02"):
primed from the history database, then fed every batch the store adds (live rows and log backfill alike)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from app.services.history.store import HistoryRow, HistoryStore

PRIMED_SPAN = 86400.0  # seconds of history read at start
# Bound: models remembered per machine (a router lists hundreds, at most thousands); past it the oldest go.
MAX_PER_MACHINE = 20_000


class LastChanges:
    def __init__(self) -> None:
        self._last: dict[str, dict[str, HistoryRow]] = {}

    def absorb(self, rows: Iterable[HistoryRow]) -> set[str]:
        """Keep the newest row of each model; returns the machines whose rows changed."""
        changed: set[str] = set()
        for r in rows:
            if not r.model:
                continue  # the router's or the machine's own transition
            mine = self._last.setdefault(r.machine, {})
            had = mine.get(r.model)
            if had is None or r.time >= had.time:
                mine[r.model] = r
                changed.add(r.machine)
                if len(mine) > MAX_PER_MACHINE:
                    del mine[min(mine, key=lambda k: mine[k].time)]
        return changed

    async def prime(self, store: HistoryStore, now: float) -> set[str]:
        return self.absorb(await store.latest_per_model(now - PRIMED_SPAN))

    def of(self, machine: str) -> Mapping[str, HistoryRow]:
        """The machine's models' last rows, by model id."""
        return self._last.get(machine, {})
