"""The pulls one fleet runs at once (several, on several machines), so that any of them can be cancelled by name
(the dashboard's `u` on a downloading row) and none is started twice.

Two pulls of one repo on one machine (two quants, say) are asked of the router one after the other's start: the
second is asked once the first shows progress (or ends). Each download child first resolves the repo's commit and
writes it to the cache's `refs/main`; two children doing that at once raced, and one failed on that file (the
router's llama.cpp, seen once in three CI runs of tests/integration/test_hub_fleet.py). Once transferring, the two
run side by side as before.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

from app.services.core.fleet_events import FleetEvent, ModelEvent
from app.services.core.router_types import RouterEvent, StreamState, StreamStateEvent
from app.services.hub.progress import PullProgress
from app.services.hub.pull import Pull, PullOutcome
from app.services.machine.machine import Machine
from app.services.router.client import RouterClient


class Pulls:
    def __init__(self) -> None:
        self._running: dict[tuple[str, str], Pull] = {}
        self._starting: dict[tuple[str, str], asyncio.Event] = {}  # (machine, repo) -> the last pull's `started`

    def running(self) -> list[tuple[str, str]]:
        """(machine, name) of every pull under way."""
        return list(self._running)

    def progress(self, machine: str, name: str) -> PullProgress | None:
        p = self._running.get((machine, name))
        return p.meter.last if p is not None else None

    async def run(
        self,
        m: Machine,
        spec: str,
        expected_total: int = 0,
        on_progress: Callable[[PullProgress], None] | None = None,
        events: Callable[[RouterClient], AsyncIterator[RouterEvent]] | None = None,
    ) -> PullOutcome:
        pull = Pull(m, spec, expected_total, on_progress=on_progress)
        if events is not None:
            pull.events = events
        key = (m.name, pull.name)
        if key in self._running:  # the same pull twice: followed once, the second waits for nothing
            return PullOutcome(m.name, pull.name, False, cause="already being pulled from here")
        self._running[key] = pull
        repo = (m.name, pull.repo)
        try:
            while (ahead := self._starting.get(repo)) is not None and not ahead.is_set():
                await ahead.wait()  # set at the other's first progress or its end, whatever happens
            if pull.cancel_asked:  # cancelled while it waited: the router was never asked
                return PullOutcome(m.name, pull.name, False, cause="cancelled on request", cancelled=True)
            self._starting[repo] = pull.started
            return await pull.run()
        finally:
            pull.started.set()
            if self._starting.get(repo) is pull.started:
                del self._starting[repo]
            self._running.pop(key, None)

    async def cancel(self, m: Machine, name: str) -> bool:
        """Cancel a pull of `name` on `m`: the one followed here, else one the router runs for somebody else.
        True when it was followed here (its outcome then says "cancelled")."""
        pull = self._running.get((m.name, name))
        if pull is not None:
            await pull.cancel()
            return True
        await (await m.router_client()).unload(name)
        return False


async def machine_events(
    subscribe: Callable[[], asyncio.Queue[FleetEvent]],
    unsubscribe: Callable[[asyncio.Queue[FleetEvent]], None],
    machine: str,
) -> AsyncIterator[RouterEvent]:
    """One machine's router events as its Machine already follows them (the fleet's own stream): a pull in the
    dashboard opens no stream of its own. Starts with "connected", since the follower is."""
    q = subscribe()
    try:
        yield StreamStateEvent(model="", state=StreamState.CONNECTED)
        while True:
            ev = await q.get()
            if isinstance(ev, ModelEvent) and ev.machine == machine:
                yield ev.event
    finally:
        with contextlib.suppress(ValueError):
            unsubscribe(q)
