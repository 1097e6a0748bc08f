"""A loaded model whose child stops answering (SIGSTOP), seen by what the dashboard already asks: the activity
poll flags it (a fleet event, a history row) and clears it when the child answers again; and the poll never keeps
an idle model awake (a router with --sleep-idle-seconds still puts it to sleep while the poll runs)."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from app.config import Config, MachineConfig, UiConfig
from app.services.activity.answering import SILENT_ROUNDS
from app.services.activity.poll import POLL_TIMEOUT, ActivityChanged
from app.services.core.fleet_events import AnsweringChanged, FleetEvent
from app.services.core.router_types import ModelState
from app.services.fleet import Fleet
from app.services.history.recorder import HistoryRecorder
from app.services.history.store import HistoryStore
from tests.conftest import RouterFactory
from tests.helpers.wait import wait_for
from tests.integration.test_ask_router import child_of


async def next_event(q: asyncio.Queue[FleetEvent], kind: type, within: float) -> FleetEvent:
    async with asyncio.timeout(within):
        while True:
            ev = await q.get()
            if isinstance(ev, kind):
                return ev


async def test_a_stopped_child_is_flagged_and_cleared(
    make_router: RouterFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    router = make_router(extra_args=["--metrics"])
    fleet = Fleet(Config(machines=(MachineConfig(name="box", url=router.url),), ui=UiConfig(activity_every=0.5)))
    store = HistoryStore()
    recorder = HistoryRecorder(fleet, store)
    rec_task = asyncio.create_task(recorder.run())
    await asyncio.sleep(0)
    q = fleet.subscribe()
    await fleet.start()
    try:
        await wait_for(lambda: fleet.view("box").stream == "sse", 30, what="the stream connected")
        await fleet.load("box", "alpha")
        await wait_for(
            lambda: any(m.id == "alpha" and m.state is ModelState.LOADED for m in fleet.models("box")), 30,
            what="alpha loaded",
        )  # fmt: skip
        pid = child_of(router, "alpha")
        os.kill(pid, signal.SIGSTOP)
        try:
            # within the rounds it takes (each bounded by POLL_TIMEOUT), plus an idle model's skipped rounds
            ev = await next_event(q, AnsweringChanged, SILENT_ROUNDS * (POLL_TIMEOUT + 1) + 5)
            assert isinstance(ev, AnsweringChanged) and ev.model == "alpha" and not ev.answering
            assert "unanswered" in ev.reason
            assert any(m.id == "alpha" and m.state is ModelState.LOADED for m in fleet.models("box"))
        finally:
            os.kill(pid, signal.SIGCONT)
        ev = await next_event(q, AnsweringChanged, POLL_TIMEOUT + 5)
        assert isinstance(ev, AnsweringChanged) and ev.model == "alpha" and ev.answering

        async def rows() -> list[str]:
            return [r.reason for r in await store.query(model="alpha") if "answering" in r.reason]

        async def both() -> bool:
            return await rows() == ["not answering", "answering again"]

        await wait_for(both, 5, what="a 'not answering' then an 'answering again' row")
    finally:
        fleet.unsubscribe(q)
        rec_task.cancel()
        await asyncio.gather(rec_task, return_exceptions=True)
        await fleet.close()
        store.close()


async def test_an_idle_model_still_sleeps_while_the_poll_runs(make_router: RouterFactory) -> None:
    router = make_router(extra_args=["--metrics", "--sleep-idle-seconds", "2"])
    fleet = Fleet(Config(machines=(MachineConfig(name="box", url=router.url),), ui=UiConfig(activity_every=0.5)))
    q = fleet.subscribe()
    await fleet.start()
    try:
        await wait_for(lambda: fleet.view("box").stream == "sse", 30, what="the stream connected")
        await fleet.load("box", "alpha")
        await wait_for(
            lambda: any(m.id == "alpha" and m.state is ModelState.LOADED for m in fleet.models("box")), 30,
            what="alpha loaded",
        )  # fmt: skip
        polled = 0
        async with asyncio.timeout(20):
            while not any(m.id == "alpha" and m.state is ModelState.SLEEPING for m in fleet.models("box")):
                ev = await q.get()
                polled += isinstance(ev, ActivityChanged)
        assert polled >= 2  # the poll ran meanwhile, and the model slept anyway
    finally:
        fleet.unsubscribe(q)
        await fleet.close()


async def test_the_opt_in_probe_flags_a_stopped_child_and_leaves_sleepers_alone(make_router: RouterFactory) -> None:
    router = make_router(models_max=2, extra_args=["--metrics"])
    # beta sleeps when idle (its preset section says so): never probed, and it still goes to sleep
    router.preset.write_text(router.preset.read_text().replace("[beta]\n", "[beta]\nsleep-idle-seconds = 2\n"))
    router.stop()
    router.start()
    ui = UiConfig(activity_every=0.5, probe_every=0.5)
    fleet = Fleet(Config(machines=(MachineConfig(name="box", url=router.url),), ui=ui))
    q = fleet.subscribe()
    await fleet.start()
    try:
        await wait_for(lambda: fleet.view("box").stream == "sse", 30, what="the stream connected")
        for model in ("alpha", "beta"):
            await fleet.load("box", model)
        await wait_for(
            lambda: {m.id for m in fleet.models("box") if m.state is ModelState.LOADED} == {"alpha", "beta"}, 30,
            what="alpha and beta loaded",
        )  # fmt: skip
        await wait_for(lambda: [mod for _, mod in fleet.prober.due()] == ["alpha"], 15, what="alpha due, beta not")
        async with asyncio.timeout(20):  # probes run every 0.5 s meanwhile; beta sleeps regardless
            while not any(m.id == "beta" and m.state is ModelState.SLEEPING for m in fleet.models("box")):
                await asyncio.sleep(0.2)
        pid = child_of(router, "alpha")
        os.kill(pid, signal.SIGSTOP)
        try:
            await fleet.prober.round()
            ev = await next_event(q, AnsweringChanged, 15)
            assert isinstance(ev, AnsweringChanged) and ev.model == "alpha" and not ev.answering
        finally:
            os.kill(pid, signal.SIGCONT)
        ev = await next_event(q, AnsweringChanged, 20)
        assert isinstance(ev, AnsweringChanged) and ev.answering
    finally:
        fleet.unsubscribe(q)
        await fleet.close()
