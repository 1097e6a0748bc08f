"""The transition history against a real router that llamaherd manages: reasons read from its log, recorded live
by the dashboard's recorder and backfilled by `llamaherd history`, never twice."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import psutil
import pytest

from app.config import load_config
from app.services.core.host_types import RunResult
from app.services.core.router_types import ModelState, RouterState
from app.services.fleet import Fleet
from app.services.history import backfill, log_readback
from app.services.history.backfill import _READ
from app.services.history.recorder import HistoryRecorder
from app.services.history.store import HistoryRow, HistoryStore
from tests.helpers.herd import Herd
from tests.helpers.router import preset_text
from tests.helpers.wait import wait_for


class Live:
    """A dashboard's share of the work, without the screen: the fleet and the history recorder."""

    def __init__(self, herd: Herd) -> None:
        self.fleet = Fleet(load_config(herd.config))
        self.store = HistoryStore()
        self.fleet.history = self.store
        self.fleet.asked_by = "the test"
        self.recorder = HistoryRecorder(self.fleet, self.store)
        self.task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.task = asyncio.create_task(self.recorder.run())
        await asyncio.sleep(0)  # subscribed before the fleet's first events
        await self.fleet.start()
        await wait_for(lambda: self.fleet.view("here").router_state is RouterState.RUNNING, 15, what="router seen")

    async def close(self) -> None:
        await self.recorder.settled()
        assert self.task is not None
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
        await self.fleet.close()
        self.store.close()

    async def state(self, model: str, *states: ModelState) -> None:
        def there() -> bool:
            m = next((m for m in self.fleet.models("here") if m.id == model), None)
            return m is not None and m.state in states

        await wait_for(there, 30, what=f"{model} {states}")

    async def row(self, model: str, reason: str, timeout: float = 15, containing: str = "") -> HistoryRow:
        """The row once it is there (an eviction read before the router wrote the spawn it made room for is
        completed by the next read of the log: wait for what the test needs of it)."""
        found: list[HistoryRow] = []

        async def look() -> bool:
            rows = await self.store.query(model=model)
            found[:] = [r for r in rows if r.reason == reason and containing in r.detail]
            return bool(found)

        await wait_for(look, timeout, what=f"a {reason!r} row for {model}")
        return found[-1]


@pytest.fixture
async def live(herd: Herd, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Live]:
    monkeypatch.setenv("XDG_STATE_HOME", str(herd.state_home))
    r = herd.run("start", "here")
    assert r.returncode == 0, r.stderr
    lv = Live(herd)
    await lv.start()
    try:
        yield lv
    finally:
        await lv.close()


def child_of(herd: Herd, model: str) -> psutil.Process:
    rec = herd.record()
    assert rec is not None
    for kid in psutil.Process(int(str(rec["pid"]))).children():
        if f"--alias {model}" in " ".join(kid.cmdline()):
            return kid
    raise AssertionError(f"no child process serves {model}")


async def test_models_max_1_records_the_eviction_naming_the_model_it_made_room_for(live: Live) -> None:
    await live.fleet.load("here", "alpha")
    await live.state("alpha", ModelState.LOADED)
    await live.fleet.load("here", "beta")
    await live.state("beta", ModelState.LOADED)
    row = await live.row("alpha", "evicted", containing="for beta")
    assert (row.from_state, row.to_state) == ("loaded", "unloaded")
    assert len([r for r in await live.store.query(model="alpha") if r.reason == "evicted"]) == 1
    assert "for beta" in row.detail and "models_max" in row.detail
    asked = [r for r in await live.store.query(model="beta") if r.to_state == "loading"]
    assert asked and asked[-1].reason == "requested" and asked[-1].detail == "by the test"
    ready = await live.row("beta", "ready")
    assert ready.to_state == "loaded" and ready.time >= asked[-1].time


async def test_a_local_log_is_read_back_in_process_without_a_shell(live: Live, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every model change reads the log again: on this machine that is a file read, not nine processes."""
    transport = live.fleet.machine("here").transport
    ran: list[str] = []
    real_run = transport.run

    async def run(argv: Sequence[str], **kw: Any) -> RunResult:
        ran.append(" ".join(argv))
        return await real_run(argv, **kw)

    monkeypatch.setattr(transport, "run", run)
    await live.fleet.load("here", "alpha")
    await live.state("alpha", ModelState.LOADED)
    ready = await live.row("alpha", "ready")
    assert ready.to_state == "loaded"
    await live.fleet.unload("here", "alpha")
    unloaded = await live.row("alpha", "requested")
    assert unloaded.detail == "by the test"
    assert not [a for a in ran if _READ in a], ran


async def test_a_new_run_is_read_from_where_it_began_in_the_log(herd: Herd, monkeypatch: pytest.MonkeyPatch) -> None:
    """A restarted router's history is read from the log's size at its start, not the last 64 MB of every run."""
    monkeypatch.setenv("XDG_STATE_HOME", str(herd.state_home))
    assert herd.run("start", "here").returncode == 0
    assert herd.run("load", "here", "alpha", "--wait").returncode == 0
    assert herd.run("stop", "here").returncode == 0
    log = Path(str((herd.record() or {})["log"]))
    first_run = log.stat().st_size
    assert herd.run("start", "here").returncode == 0
    rec = herd.record() or {}
    assert rec["log_offset"] == first_run > 0
    read_from: list[int] = []
    real = log_readback.read_matches

    def spy(path: str, offset: int, *rest: Any) -> bytes | None:
        read_from.append(offset)
        return real(path, offset, *rest)

    monkeypatch.setattr(backfill, "read_matches", spy)
    fleet = Fleet(load_config(herd.config))
    try:
        got = await backfill.read_transitions(fleet.machine("here"))
    finally:
        await fleet.close()
    assert got is not None
    assert read_from == [first_run]
    # alpha was loaded in the first run only: nothing of it is this run's
    assert not [t for t in got[1] if t.model == "alpha"], got[1]


async def test_a_preset_edit_records_preset_reload(live: Live, herd: Herd, tiny_models: dict[str, Path]) -> None:
    await live.fleet.load("here", "alpha")
    await live.state("alpha", ModelState.LOADED)
    preset = herd.root / "models.ini"
    preset.write_text(preset_text(dict(tiny_models), {"alpha": {"ctx-size": "128"}}))
    await live.fleet.reload("here")
    row = await live.row("alpha", "preset reload")
    assert (row.from_state, row.to_state) == ("loaded", "unloaded")
    assert "source updated or removed" in row.detail or "preset source" in row.detail


async def test_kill_9_of_a_child_records_crashed_with_its_exit_status(live: Live, herd: Herd) -> None:
    await live.fleet.load("here", "alpha")
    await live.state("alpha", ModelState.LOADED)
    kid = child_of(herd, "alpha")
    os.kill(kid.pid, signal.SIGKILL)
    await live.state("alpha", ModelState.FAILED, ModelState.UNLOADED)
    row = await live.row("alpha", "crashed")
    assert row.to_state == "failed" and row.from_state == "loaded"
    assert "exit status" in row.detail
    status = int(row.detail.split("exit status ")[1].split()[0].rstrip(";"))
    assert status != 0


def history(herd: Herd, *args: str) -> list[dict[str, object]]:
    r = herd.run("history", "--json", *args)
    assert r.returncode == 0, r.stderr
    return [json.loads(line) for line in r.stdout.splitlines()]


def model_rows(rows: list[dict[str, object]]) -> list[tuple[object, ...]]:
    return [(r["time"], r["model"], r["from"], r["to"]) for r in rows if r["model"]]


async def test_a_restart_backfills_what_it_missed_once(herd: Herd, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(herd.state_home))
    assert herd.run("start", "here").returncode == 0
    first = Live(herd)
    await first.start()
    await first.fleet.load("here", "alpha")
    await first.state("alpha", ModelState.LOADED)
    await first.row("alpha", "ready")
    await first.close()  # llamaherd quits; the router keeps running

    # Nothing of llamaherd runs while these happen (the commands ask the router and leave).
    assert herd.run("load", "here", "beta", "--wait").returncode == 0
    assert herd.run("unload", "here", "beta").returncode == 0

    async def beta_gone() -> bool:
        return b"name=beta exited with status" in Path(str((herd.record() or {})["log"])).read_bytes()

    await wait_for(beta_gone, 15, what="beta's exit in the log")

    rows = history(herd, "here")
    evicted = [r for r in rows if r["model"] == "alpha" and r["reason"] == "evicted"]
    assert len(evicted) == 1 and "for beta" in str(evicted[0]["detail"]), rows
    beta = [(r["to"], r["reason"], r["detail"]) for r in rows if r["model"] == "beta"]
    assert ("loading", "requested", "by command `llamaherd load`") in beta
    assert ("unloaded", "requested", "by command `llamaherd unload`") in beta
    assert set(rows[0]) >= {"time", "machine", "model", "from", "to", "reason", "detail"}

    # Read again, and by a restarted dashboard that adopts the router: nothing is added twice.
    again = history(herd, "here")
    assert model_rows(again) == model_rows(rows)
    second = Live(herd)
    await second.start()
    await second.recorder.settled()
    await second.close()
    after = history(herd, "here")
    assert model_rows(after) == model_rows(rows)
    assert len(set(model_rows(after))) == len(model_rows(after))
    assert any(r["reason"] == "adopted" for r in after)
    started = [r for r in after if not r["model"] and r["to"] == "running" and r["reason"] == "requested"]
    assert len(started) == 1 and str(started[0]["detail"]).startswith("by command `llamaherd start`; pid ")
