"""Fleet events turned into history rows, with reasons.

- A managed router (ours): its log says why (history/backfill.py); every model change reads it again, and an
  adopt or a start reads it back, so what happened while no llamaherd ran is added too.
- An attached router (somebody else's): its log is not ours, so the reason is inferred from the order of events
  and the row says "inferred": an unload followed within SETTLE seconds by another model loading is an eviction
  for that model; one beside a list reload is a preset reload; a failed state is a crash with its exit code.
- Router and machine transitions (started, adopted, stopped, exited, not answering, unreachable, back) come from
  the machine's view; "requested" names the command or key when this llamaherd asked (HistoryStore.note_request).
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
from collections.abc import Callable
from typing import Protocol

from app.services.core.fleet_events import (
    AnsweringChanged,
    FleetEvent,
    MachineChanged,
    MachineView,
    ModelEvent,
    ModelsChanged,
    ModelsUpdated,
)
from app.services.core.host_types import Connection
from app.services.core.router_types import ModelInfo, ModelsReloadEvent, ModelState, RouterState
from app.services.core.textsafe import visible
from app.services.history.backfill import backfill
from app.services.history.scope import router_scope
from app.services.history.store import HistoryRow, HistoryStore
from app.services.machine.machine import Machine

SETTLE = 2.0  # seconds an attached router's unload waits for the event that explains it
CATCH_UP_AFTER = 0.3  # a burst of changes is read from the log once
LATE_LINES = 1.5
ASKED_WITHIN = 15.0
INFERRED = "inferred from the order of events"
_SLEEP = {ModelState.SLEEPING}
_SHOWN = {ModelState.UNLOADED, ModelState.LOADING, ModelState.LOADED, ModelState.SLEEPING, ModelState.FAILED}


class FleetLike(Protocol):
    """What the recorder needs of the fleet."""

    def subscribe(self) -> asyncio.Queue[FleetEvent]: ...
    def unsubscribe(self, q: asyncio.Queue[FleetEvent]) -> None: ...
    def machine(self, name: str) -> Machine: ...


class HistoryRecorder:
    def __init__(self, fleet: FleetLike, store: HistoryStore, clock: Callable[[], float] = time.time) -> None:
        self.fleet = fleet
        self.store = store
        self.clock = clock
        self.error = ""  # the last failure to write, shown by whoever asks
        self._views: dict[str, MachineView] = {}
        self._models: dict[str, dict[str, ModelState]] = {}
        self._reloaded: dict[str, float] = {}
        self._pending: dict[str, list[HistoryRow]] = {}  # attached: unloads waiting for what explains them
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._again: set[str] = set()  # machines whose log changed while it was being read
        self._settlers: set[asyncio.Task[None]] = set()

    async def run(self) -> None:
        q = self.fleet.subscribe()
        try:
            while True:
                await self.handle(await q.get())
        finally:
            self.fleet.unsubscribe(q)
            for t in [*self._tasks.values(), *self._settlers]:
                t.cancel()

    async def handle(self, ev: FleetEvent) -> None:
        try:
            if isinstance(ev, MachineChanged):
                await self._machine(ev.view)
            elif isinstance(ev, ModelsChanged):
                await self._models_changed(ev.machine, ev.models)
            elif isinstance(ev, ModelsUpdated):
                await self._models_changed(ev.machine, ev.models, delta=True)
            elif isinstance(ev, ModelEvent) and isinstance(ev.event, ModelsReloadEvent):
                self._reloaded[ev.machine] = self.clock()
            elif isinstance(ev, AnsweringChanged) and not (ev.answering and ev.reason):
                # issue 35: a loaded model whose child stopped answering, then answers again (one that went away
                # meanwhile is told by its unload row, not as "answering again")
                now = "answering" if ev.answering else "not answering"
                was = "not answering" if ev.answering else "answering"
                reason = "answering again" if ev.answering else "not answering"
                await self._add([self._row(ev.machine, ev.model, was, now, reason, ev.reason)])
        except (sqlite3.Error, OSError) as e:
            self.error = f"history not recorded: {e}"

    # ---- router and machine ----

    def _router(self, machine: str) -> str:
        return self.fleet.machine(machine).cfg.router

    def _row(self, machine: str, model: str, was: str, now: str, reason: str, detail: str) -> HistoryRow:
        scope = router_scope(self.fleet.machine(machine).cfg)  # the router's identity, not the config's name for it
        row = (self.clock(), machine, self._router(machine), model, was, now, reason, visible(detail))
        return HistoryRow(*row, scope=scope)

    async def _machine(self, v: MachineView) -> None:
        old = self._views.get(v.name)
        self._views[v.name] = v
        first = old is None or old.router_state is RouterState.UNKNOWN
        if first and v.router_state is RouterState.RUNNING:
            # The first look finds it running: adopted, and its log read back for what happened meanwhile.
            await self._add([self._row(v.name, "", "unknown", "running", "adopted", _since(v))])
            self._catch_up(v.name, at_once=True)
        if old is None:
            return
        rows = []
        if old.connection != v.connection and Connection.UNREACHABLE in (old.connection, v.connection):
            back = old.connection is Connection.UNREACHABLE
            reason = "machine back" if back else "machine unreachable"
            rows.append(self._row(v.name, "", old.connection.value, v.connection.value, reason, v.connection_reason))
        if old.router_state != v.router_state and old.router_state is not RouterState.UNKNOWN:
            rows.append(await self._router_row(old, v))
            if v.router_state in (RouterState.RUNNING, RouterState.STOPPED) and v.managed:
                self._catch_up(v.name, at_once=True)
        await self._add(rows)

    async def _router_row(self, old: MachineView, v: MachineView) -> HistoryRow:
        to = v.router_state
        reason, detail = to.value, v.router_reason
        if to is RouterState.RUNNING:
            reason, detail = "started", _since(v)
        elif to is RouterState.STOPPED:
            reason = "requested"
        elif to is RouterState.EXITED:
            reason = "router exited"
            if v.log_tail:
                detail = f"{detail}; last line: {v.log_tail[-1]}"
        if reason in ("started", "requested"):
            by = await self._asked(v.name, "", "start" if to is RouterState.RUNNING else "stop")
            detail = f"by {by}" + (f"; {detail}" if detail else "") if by else detail
        return self._row(v.name, "", old.router_state.value, to.value, reason, detail)

    # ---- models ----

    async def _models_changed(self, machine: str, models: tuple[ModelInfo, ...], delta: bool = False) -> None:
        """`delta`: `models` are only those that changed (ModelsUpdated); else the whole list."""
        known = self._models.get(machine)
        if known is None:
            if not delta:
                self._models[machine] = {m.id: m.state for m in models}
            return  # the first list is where we start, not a change
        if delta:
            # Updated in place (a copy per event was O(models)): the states before are kept for the comparison.
            known = {m.id: known.get(m.id, ModelState.UNLOADED) for m in models}
            self._models[machine].update((m.id, m.state) for m in models)
        else:
            self._models[machine] = {m.id: m.state for m in models}
        v = self._views.get(machine)
        managed = v is not None and v.managed
        exited = v is not None and v.router_state is RouterState.EXITED
        changed = [(m, known.get(m.id, ModelState.UNLOADED), m.state) for m in models
                   if m.state in _SHOWN and known.get(m.id, ModelState.UNLOADED) != m.state]  # fmt: skip
        if not changed:
            return
        if managed and not exited:
            # The log has the reasons; only sleeping is not in it.
            rows = [self._plain(machine, m, was, to) for m, was, to in changed if _SLEEP & {was, to}]
            await self._add(rows)
            self._catch_up(machine)
            return
        rows = []
        changed.sort(key=lambda c: c[2] is ModelState.LOADING)  # an unload before the load it made room for
        for m, was, to in changed:
            if exited:
                rows.append(self._row(machine, m.id, was.value, to.value, "router exited", "its router went away"))
            elif to in (ModelState.UNLOADED, ModelState.FAILED) and was.running:
                rows.extend(await self._unloaded(machine, m, was, to))
            else:
                rows.append(await self._inferred(machine, m, was, to))
        await self._add(rows)

    def _plain(self, machine: str, m: ModelInfo, was: ModelState, to: ModelState) -> HistoryRow:
        reason = {ModelState.SLEEPING: "idle sleep"}.get(to, "woken" if was is ModelState.SLEEPING else to.value)
        return self._row(machine, m.id, was.value, to.value, reason, "")

    async def _inferred(self, machine: str, m: ModelInfo, was: ModelState, to: ModelState) -> HistoryRow:
        if to is ModelState.LOADING:
            for row in self._pending.pop(machine, []):  # it made room for this one
                await self._add([_explained(row, "evicted", f"{INFERRED}: {m.id} began loading just after")])
            by = await self._asked(machine, m.id, "load")
            detail = f"by {by}" if by else f"{INFERRED}: a load request or a request for it"
            return self._row(machine, m.id, was.value, to.value, "requested", detail)
        if to is ModelState.LOADED and was is ModelState.LOADING:
            return self._row(machine, m.id, was.value, to.value, "ready", "")
        return self._plain(machine, m, was, to)

    async def _unloaded(self, machine: str, m: ModelInfo, was: ModelState, to: ModelState) -> list[HistoryRow]:
        if to is ModelState.FAILED or m.failed:
            detail = f"exit code {m.exit_code}" + (" while loading" if was is ModelState.LOADING else "")
            return [self._row(machine, m.id, was.value, to.value, "crashed", f"{detail}; {INFERRED}")]
        by = await self._asked(machine, m.id, "unload")
        if by:
            return [self._row(machine, m.id, was.value, to.value, "requested", f"by {by}")]
        if self.clock() - self._reloaded.get(machine, float("-inf")) <= SETTLE:
            return [self._row(machine, m.id, was.value, to.value, "preset reload", f"{INFERRED}: the list reloaded")]
        row = self._row(machine, m.id, was.value, to.value, "requested", f"{INFERRED}: nothing else explains it")
        self._pending.setdefault(machine, []).append(row)
        task = asyncio.create_task(self._settle(machine, row))
        self._settlers.add(task)
        task.add_done_callback(self._settlers.discard)
        return []

    async def _settle(self, machine: str, row: HistoryRow) -> None:
        """An unload nothing explained within SETTLE seconds: a list reload since, or an unload asked elsewhere."""
        await asyncio.sleep(SETTLE)
        pending = self._pending.get(machine, [])
        if row not in pending:
            return
        pending.remove(row)
        if self._reloaded.get(machine, float("-inf")) >= row.time:
            row = _explained(row, "preset reload", f"{INFERRED}: the list reloaded")
        with contextlib.suppress(sqlite3.Error, OSError):
            await self._add([row])

    # ---- helpers ----

    async def _asked(self, machine: str, model: str, action: str) -> str:
        for _t, m, a, by in reversed(await self.store.requests(machine, self.clock() - ASKED_WITHIN)):
            if m == model and a == action:
                return by
        return ""

    async def _add(self, rows: list[HistoryRow]) -> None:
        if rows:
            await self.store.add(rows)

    def _catch_up(self, machine: str, at_once: bool = False) -> None:
        """Read the managed router's log again soon (once for a burst of changes)."""
        if machine in self._tasks and not self._tasks[machine].done():
            self._again.add(machine)
            return
        self._tasks[machine] = asyncio.create_task(self._read_log(machine, 0.0 if at_once else CATCH_UP_AFTER))

    async def _read_log(self, machine: str, after: float) -> None:
        m = self.fleet.machine(machine)
        late = True
        while True:
            await asyncio.sleep(after)
            self._again.discard(machine)
            try:
                await backfill(m, self.store)
            except (sqlite3.Error, OSError) as e:
                self.error = f"history not recorded: {e}"
            if machine in self._again:
                after = CATCH_UP_AFTER
            elif late:
                # A child's lines reach the log through the router's output after the event that announced the
                # change ("model loaded" came after the stream said loaded): read once more a little later.
                late, after = False, LATE_LINES
            else:
                return

    async def settled(self) -> None:
        """Wait until every log read and every pending inference is done (tests, and closing)."""
        while pending := [t for t in (*self._tasks.values(), *self._settlers) if not t.done()]:
            await asyncio.gather(*pending, return_exceptions=True)


def _since(v: MachineView) -> str:
    parts = []
    if v.pid:
        parts.append(f"pid {v.pid}")
    if v.started_at:
        parts.append("up since " + time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(v.started_at)))
    return ", ".join(parts)


def _explained(row: HistoryRow, reason: str, detail: str) -> HistoryRow:
    return row._replace(reason=reason, detail=detail)
