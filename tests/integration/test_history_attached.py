"""History of an attached router (somebody else's: its log is not ours): reasons inferred from the order of events,
and said to be inferred."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import psutil

from app.config import load_config
from app.services.core.router_types import ModelState, RouterState
from app.services.fleet import Fleet
from app.services.history.recorder import HistoryRecorder
from app.services.history.store import HistoryRow, HistoryStore
from tests.conftest import RouterFactory
from tests.helpers.wait import wait_for


async def test_eviction_and_crash_are_inferred_from_event_order(make_router: RouterFactory, tmp_path: Path) -> None:
    router = make_router(models_max=1)
    cfg = tmp_path / "config.toml"
    cfg.write_text(f'[[machines]]\nname = "box"\nurl = "{router.url}"\n')
    fleet = Fleet(load_config(cfg))
    store = HistoryStore(str(tmp_path / "history.sqlite3"))
    fleet.history, fleet.asked_by = store, "the test"
    recorder = HistoryRecorder(fleet, store)
    task = asyncio.create_task(recorder.run())
    await asyncio.sleep(0)
    await fleet.start()
    try:
        await wait_for(lambda: fleet.view("box").router_state is RouterState.ATTACHED, 15, what="attached")

        def state(model: str) -> ModelState | None:
            return next((m.state for m in fleet.models("box") if m.id == model), None)

        async def rows(model: str, reason: str) -> list[HistoryRow]:
            return [r for r in await store.query(model=model) if r.reason == reason]

        await fleet.load("box", "alpha")
        await wait_for(lambda: state("alpha") is ModelState.LOADED, 30, what="alpha loaded")
        await fleet.load("box", "beta")
        await wait_for(lambda: state("beta") is ModelState.LOADED, 30, what="beta loaded")
        await wait_for(lambda: rows("alpha", "evicted"), 10, what="alpha's eviction")
        (evicted,) = await rows("alpha", "evicted")
        assert "inferred" in evicted.detail and "beta began loading" in evicted.detail
        asked = [r for r in await store.query(model="beta") if r.to_state == "loading"]
        assert asked[-1].reason == "requested" and asked[-1].detail == "by the test"  # known, not inferred

        kid = next(k for k in psutil.Process(router.pid).children() if "--alias beta" in " ".join(k.cmdline()))
        os.kill(kid.pid, signal.SIGKILL)
        await wait_for(lambda: rows("beta", "crashed"), 15, what="beta's crash")
        (crashed,) = await rows("beta", "crashed")
        assert crashed.to_state == "failed" and "exit code" in crashed.detail and "inferred" in crashed.detail
    finally:
        await recorder.settled()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await fleet.close()
        store.close()
