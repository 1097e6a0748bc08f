"""A real router frozen with SIGSTOP: its process is alive, its port accepts connections, and it says nothing.

It must be shown as *not answering* (not running, not exited) by the follower the dashboard uses and by
`status` within 5 s, `load --wait` must end with "router not answering", a load that timed out is "sent, no
answer", and SIGCONT brings it back by itself.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.cli.machine_cmds import machine_status
from app.config import MachineConfig
from app.services.core.router_types import RouterState
from app.services.machine.machine import Machine
from tests.helpers.herd import Herd, local_config
from tests.helpers.router import RouterProc, preset_text
from tests.helpers.tmux import Tmux
from tests.helpers.wait import wait_for

NOT_ANSWERING_WITHIN = 5.0


@pytest.fixture
def herd(tmp_path: Path, tiny_models: dict[str, Path], llama_server: str) -> Iterator[Herd]:
    preset = tmp_path / "models.ini"
    preset.write_text(preset_text(dict(tiny_models)))
    h = Herd(root=tmp_path, config=tmp_path / "config.toml", extra_env={"LLAMA_SERVER": llama_server})
    h.write_config(local_config("here", preset))
    yield h
    for pid in h.router_pids():  # a stopped process cannot die of SIGTERM; let stop_all's SIGKILL through
        os.kill(pid, signal.SIGCONT)
    h.stop_all()


@pytest.mark.timing
async def test_stopped_router_is_not_answering_everywhere_and_comes_back(
    herd: Herd, tmp_path: Path, llama_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert herd.run("start", "here").returncode == 0
    rec = herd.record()
    assert rec is not None
    pid = int(rec["pid"])  # type: ignore[call-overload]
    monkeypatch.setenv("XDG_STATE_HOME", str(herd.state_home))
    cfg = MachineConfig(name="here", preset=str(tmp_path / "models.ini"), program=llama_server)
    m = Machine(cfg, lambda ev: None)
    m.start()
    try:
        await wait_for(
            lambda: m.view.router_state is RouterState.RUNNING and m.view.stream == "sse", 30, what="running, on sse"
        )

        os.kill(pid, signal.SIGSTOP)
        took = await wait_for(lambda: m.view.router_state is RouterState.NOT_ANSWERING, 15, what="not answering")
        print(f"SIGSTOP -> follower shows not answering: {took:.1f} s")
        assert took <= NOT_ANSWERING_WITHIN
        assert "not answering" in m.view.router_reason

        # status, in-process (the figure without interpreter start-up), then the real command
        t0 = time.monotonic()
        probe = Machine(cfg, lambda ev: None)
        try:
            st = await machine_status(probe)
        finally:
            await probe.close()
        status_took = time.monotonic() - t0
        print(f"status on a stopped router: {status_took:.1f} s")
        assert st["router"] == "not answering" and status_took < NOT_ANSWERING_WITHIN, st
        cli = await asyncio.to_thread(herd.run, "status")
        assert "not answering" in cli.stdout, cli.stdout

        load = await asyncio.to_thread(herd.run, "load", "here", "alpha")
        assert load.returncode == 1 and "sent, no answer" in load.stderr, load.stderr
        wait = await asyncio.to_thread(herd.run, "load", "here", "alpha", "--wait")
        assert wait.returncode == 1 and "router not answering" in wait.stderr, wait.stderr
        assert "did not finish loading" not in wait.stderr
        again = await asyncio.to_thread(herd.run, "start", "here")
        assert again.returncode == 1 and "not answering" in again.stderr, again.stderr
        assert herd.router_pids() == [pid]  # no second router beside the silent one

        os.kill(pid, signal.SIGCONT)
        back = await wait_for(lambda: m.view.router_state is RouterState.RUNNING, 15, what="running again")
        print(f"SIGCONT -> running again: {back:.1f} s")
        # "sent, no answer" meant it: the load asked while it was stopped happens once it runs again.
        await wait_for(lambda: "alpha" in m.models and m.models["alpha"].state.running, 60, what="alpha loaded")
    finally:
        os.kill(pid, signal.SIGCONT)
        await m.close()


@pytest.mark.timing
def test_dashboard_shows_a_stopped_router_as_not_answering(
    tmux: Tmux,
    router: RouterProc,
    tmp_path: Path,
) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text(f'[[machines]]\nname = "box"\nurl = "{router.url}"\n')
    env = {"TERM": "screen-256color", "LANG": "C.UTF-8", "XDG_STATE_HOME": str(tmp_path)}
    tmux.start(f"{shlex.quote(sys.executable)} -m app --config {shlex.quote(str(cfg))}", env)
    tmux.wait(lambda s: "attached" in s and "alpha" in s, timeout=30)
    os.kill(router.pid, signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        tmux.wait(lambda s: "not answering" in s, timeout=15)
        took = time.monotonic() - t0
        print(f"SIGSTOP -> dashboard shows not answering: {took:.1f} s")
        assert took <= NOT_ANSWERING_WITHIN
        card = [ln for ln in tmux.screen().splitlines() if "box" in ln and ("●" in ln or "○" in ln)]
        assert card and "attached" not in card[0], card  # not shown as up while it says nothing
    finally:
        os.kill(router.pid, signal.SIGCONT)
    tmux.wait(lambda s: "not answering" not in s, timeout=15)
