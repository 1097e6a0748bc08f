"""Dashboard CPU while nothing changes: 5 routers, attached and then managed, process CPU time / wall time.

Targets: <= 2 % of a core with 5 attached routers; <= 1 % with 5 managed routers (issue 11.4: a managed router adds
its process checks, log tail and host stats per machine). The real `python -m app` runs in a real tmux pane (a real
terminal to paint to), on five real routers nobody touches; host stats still arrive every 2 s per machine, as they
would on a quiet fleet. The managed routers are started by llamaherd's own RouterManager before the dashboard starts
(it adopts them) and stopped after; they are measured from their second minute (in its first, an uptime shows
seconds). Without tmux it falls back to the app headless in this process (App.run_test),
which paints to nothing and so flatters it. The CPU counted is the dashboard's and its children's, not the routers'.

Run: python -m bench.ui_idle_cpu [SECONDS] [attached|managed|both]     (default: 45 s, both)
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from app.config import Config, MachineConfig, write_config
from app.services.fleet import Fleet
from app.services.lifecycle.llama_server_binary import HOW_TO_GET, find_llama_server
from app.services.machine.machine import Machine
from app.ui.app import make_app
from bench.common import cpu_seconds, start_router, tiny_models, workdir
from tests.helpers.router import RouterProc, preset_text

ROOT = Path(__file__).resolve().parents[1]
SETTLE = 5.0
UPTIME_MINUTE = 62.0


@dataclass(frozen=True)
class TmuxIdle:
    share: float
    """The dashboard's CPU (and its children's) over wall time."""
    rss_mb: float
    screen: str


_measures = itertools.count()


def tmux_idle(cfg: Path, seconds: float, state: Path | None = None, settle: float = SETTLE) -> TmuxIdle:
    """The real `python -m app` in a tmux pane of 160×50, measured after `settle` for `seconds`."""
    # A socket of its own per measure: the last one's server may still be going away (`--runs K` failed to start
    # its second tmux on the same name now and then).
    sock = f"llamaherd-bench-{os.getpid()}-{next(_measures)}"
    xdg = f"XDG_STATE_HOME={shlex.quote(str(state))} " if state is not None else ""
    cmd = f"cd {shlex.quote(str(ROOT))} && exec env TERM=screen-256color {xdg}{shlex.quote(sys.executable)} -m app " \
          f"--config {shlex.quote(str(cfg))}"  # fmt: skip
    new = ["new-session", "-d", "-x", "160", "-y", "50", "-s", "b", cmd]
    subprocess.run(["tmux", "-L", sock, "-f", "/dev/null", *new], check=True)
    pids = [int(subprocess.run(["tmux", "-L", sock, "display-message", "-p", "-t", "b", f], capture_output=True,
                               text=True).stdout.strip()) for f in ("#{pane_pid}", "#{pid}")]  # fmt: skip
    try:
        app = psutil.Process(pids[0])
        time.sleep(settle)
        c0, w0 = cpu_seconds(app), time.monotonic()
        time.sleep(seconds)
        c1, w1 = cpu_seconds(app), time.monotonic()
        rss = app.memory_info().rss / 2**20
        screen = subprocess.run(["tmux", "-L", sock, "capture-pane", "-p", "-t", "b"], capture_output=True, text=True)
        return TmuxIdle((c1 - c0) / (w1 - w0), rss, screen.stdout)
    finally:
        subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def in_tmux(cfg: Path, seconds: float, state: Path | None = None, settle: float = SETTLE) -> float:
    measured = tmux_idle(cfg, seconds, state, settle)
    print("\n".join(measured.screen.splitlines()[:8]))
    return measured.share


async def headless(config: Config, seconds: float) -> float:
    app = make_app(config, Fleet(config))
    async with app.run_test(size=(160, 50)):
        await asyncio.sleep(SETTLE)
        c0, w0 = time.process_time(), time.monotonic()
        await asyncio.sleep(seconds)
        return (time.process_time() - c0) / (time.monotonic() - w0)


def attached(seconds: float) -> None:
    d = workdir()
    models = {k: v for k, v in tiny_models(d).items() if k != "broken"}
    routers: list[RouterProc] = []
    try:
        for i in range(5):
            routers.append(start_router(d, dict(models), name=f"r{i}"))
        cfg_path = d / "config.toml"
        cfg_path.write_text(
            "".join(f'[[machines]]\nname = "box{i}"\nurl = "{r.url}"\n\n' for i, r in enumerate(routers))
        )
        if shutil.which("tmux"):
            share = in_tmux(cfg_path, seconds)
            where = "python -m app in tmux"
        else:
            config = Config(machines=tuple(MachineConfig(name=f"box{i}", url=r.url) for i, r in enumerate(routers)))
            share = asyncio.run(headless(config, seconds))
            where = "headless App.run_test (no tmux here)"
    finally:
        for r in routers:
            r.stop()
    print(f"idle dashboard, 5 routers attached, {seconds:.0f} s ({where}): CPU {share * 100:.2f}% of one core")


async def _each(config: Config, what: str) -> None:
    """Start (or stop) every machine's router through llamaherd's own RouterManager, as `llamaherd start` does."""

    async def one(mc: MachineConfig) -> None:
        m = Machine(mc, emit=lambda ev: None)
        try:
            assert m.manager is not None
            await (m.manager.start() if what == "start" else m.manager.stop())
        finally:
            await m.close()

    await asyncio.gather(*(one(mc) for mc in config.machines))


def managed(seconds: float) -> None:
    binary = find_llama_server()
    if binary is None:
        raise SystemExit(HOW_TO_GET)
    d = workdir()
    models = {k: v for k, v in tiny_models(d).items() if k != "broken"}
    preset = d / "models.ini"
    preset.write_text(preset_text(dict(models)))
    state = d / "state"
    os.environ["XDG_STATE_HOME"] = str(state)  # the routers' records, for this process and the dashboard
    config = Config(
        machines=tuple(
            MachineConfig(name=f"box{i}", router=f"bench-idle-{i}", program=binary, preset=str(preset))
            for i in range(5)
        )
    )
    cfg_path = d / "config.toml"
    write_config(config, cfg_path)
    asyncio.run(_each(config, "start"))
    started = time.monotonic()
    try:
        if shutil.which("tmux"):
            # Measured once the routers have run a minute, as on a fleet left alone: in its first minute a card's
            # uptime shows seconds (so it repaints every second) by design.
            share = in_tmux(cfg_path, seconds, state, max(SETTLE, UPTIME_MINUTE - (time.monotonic() - started)))
            where = "python -m app in tmux"
        else:
            share = asyncio.run(headless(config, seconds))
            where = "headless App.run_test (no tmux here)"
    finally:
        asyncio.run(_each(config, "stop"))
    print(f"idle dashboard, 5 routers managed, {seconds:.0f} s ({where}): CPU {share * 100:.2f}% of one core")


def main(seconds: float, which: str) -> None:
    if which in ("attached", "both"):
        attached(seconds)
    if which in ("managed", "both"):
        managed(seconds)


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 45.0, sys.argv[2] if len(sys.argv) > 2 else "both")
