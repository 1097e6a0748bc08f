"""The router's process-tree RSS rides on every stats round but is measured only every RSS_EVERY_ROUNDS-th round of
the one schedule (each measure walks the process table locally, is an agent request over ssh; machines on one host
share it), and at once for a new router. Rounds are
stepped, no sleeping; the transport is the real local one, counted."""

from __future__ import annotations

import asyncio
import dataclasses
import os

import pytest

from app.config import MachineConfig
from app.services.core.fleet_events import FleetEvent, HostStatsChanged
from app.services.core.router_types import RouterState
from app.services.hosts.local import LocalTransport
from app.services.machine import machine as machine_mod
from app.services.machine.machine import RSS_EVERY_ROUNDS, Machine


class CountedLocal(LocalTransport):
    def __init__(self) -> None:
        super().__init__("here")
        self.measured: list[int] = []

    async def process_tree_rss(self, pid: int) -> int | None:
        self.measured.append(pid)
        return await super().process_tree_rss(pid)


async def test_rss_is_measured_every_few_rounds_and_sent_with_each(monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[FleetEvent] = []
    transport = CountedLocal()
    m = Machine(MachineConfig(name="here"), events.append, transport=transport)
    me, parent = os.getpid(), os.getppid()
    rounds: list[float] = []
    total = 2 * RSS_EVERY_ROUNDS + 3

    async def stepped(every: float) -> None:
        rounds.append(every)
        if len(rounds) == RSS_EVERY_ROUNDS + 2:  # another router (a restart): measured at once
            m.view = dataclasses.replace(m.view, pid=parent)
        if len(rounds) == total:
            raise asyncio.CancelledError
        await asyncio.sleep(0)

    monkeypatch.setattr(machine_mod, "next_round", stepped)
    monkeypatch.setattr(machine_mod, "round_number", lambda every: len(rounds))
    m.view = dataclasses.replace(m.view, pid=me, router_state=RouterState.RUNNING)
    with pytest.raises(asyncio.CancelledError):
        await m._follow_stats()
    sent = [ev for ev in events if isinstance(ev, HostStatsChanged)]
    assert len(sent) == total
    assert all(ev.router_rss is not None and ev.router_rss > 0 for ev in sent)  # every round carries a figure
    # Rounds 0 and 5 for the first pid, then the new one at once (round 7) and at the schedule's next (10).
    assert transport.measured == [me, me, parent, parent]
    m.view = dataclasses.replace(m.view, router_state=RouterState.STOPPED)
    events.clear()
    rounds.clear()
    monkeypatch.setattr(machine_mod, "next_round", _once)
    with pytest.raises(asyncio.CancelledError):
        await m._follow_stats()
    assert [ev.router_rss for ev in events if isinstance(ev, HostStatsChanged)] == [None]  # no router, no figure


async def _once(every: float) -> None:
    raise asyncio.CancelledError
