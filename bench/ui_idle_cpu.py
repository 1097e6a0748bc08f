"""Dashboard CPU while nothing changes: 5 routers attached, 60 s, process CPU time / wall time. Target: <= 2%.

The real `python -m app` runs in a real tmux pane (a real terminal to paint to), attached to five real routers
that nobody touches; host stats still arrive every 2 s per machine, as they would on a quiet fleet. Without tmux
it falls back to the app headless in this process (App.run_test), which paints to nothing and so flatters it.

Run: python -m bench.ui_idle_cpu [SECONDS]
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from app.config import Config, MachineConfig
from app.services.fleet import Fleet
from app.ui.app import make_app
from bench.common import start_router, tiny_models, workdir
from tests.helpers.router import RouterProc

ROOT = Path(__file__).resolve().parents[1]
SETTLE = 5.0


def cpu_seconds(p: psutil.Process) -> float:
    t = p.cpu_times()
    total = t.user + t.system
    for c in p.children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess):
            ct = c.cpu_times()
            total += ct.user + ct.system
    return total


def in_tmux(cfg: Path, seconds: float) -> float:
    sock = f"llamaherd-bench-{os.getpid()}"
    cmd = f"cd {shlex.quote(str(ROOT))} && exec env TERM=screen-256color {shlex.quote(sys.executable)} -m app " \
          f"--config {shlex.quote(str(cfg))}"  # fmt: skip
    new = ["new-session", "-d", "-x", "160", "-y", "50", "-s", "b", cmd]
    subprocess.run(["tmux", "-L", sock, "-f", "/dev/null", *new], check=True)
    pids = [int(subprocess.run(["tmux", "-L", sock, "display-message", "-p", "-t", "b", f], capture_output=True,
                               text=True).stdout.strip()) for f in ("#{pane_pid}", "#{pid}")]  # fmt: skip
    try:
        app = psutil.Process(pids[0])
        time.sleep(SETTLE)
        c0, w0 = cpu_seconds(app), time.monotonic()
        time.sleep(seconds)
        c1, w1 = cpu_seconds(app), time.monotonic()
        screen = subprocess.run(["tmux", "-L", sock, "capture-pane", "-p", "-t", "b"], capture_output=True, text=True)
        print("\n".join(screen.stdout.splitlines()[:8]))
        return (c1 - c0) / (w1 - w0)
    finally:
        subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


async def headless(config: Config, seconds: float) -> float:
    app = make_app(config, Fleet(config))
    async with app.run_test(size=(160, 50)):
        await asyncio.sleep(SETTLE)
        c0, w0 = time.process_time(), time.monotonic()
        await asyncio.sleep(seconds)
        return (time.process_time() - c0) / (time.monotonic() - w0)


def main(seconds: float) -> None:
    d = workdir()
    models = {k: v for k, v in tiny_models(d).items() if k != "broken"}
    routers: list[RouterProc] = []
    try:
        for i in range(5):
            routers.append(start_router(d, models, name=f"r{i}"))
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


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 60.0)
