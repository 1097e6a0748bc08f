"""Time to "not answering" for a real router frozen with SIGSTOP, and back to running after SIGCONT: in the
follower the dashboard uses, on the dashboard's screen (real tmux), and by `status` (in-process, and the real
command with its interpreter start-up); plus how long `load --wait` takes to say "router not answering".

Run: python -m bench.liveness [--trials N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from app.cli.machine_cmds import machine_status
from app.config import MachineConfig
from app.services.core.router_types import RouterState
from app.services.lifecycle.llama_server_binary import HOW_TO_GET, find_llama_server
from app.services.machine.machine import Machine
from bench.common import tiny_models, workdir
from tests.helpers.router import preset_text

ROOT = Path(__file__).resolve().parents[1]


async def _until(cond: object, timeout: float) -> float:
    t0 = time.monotonic()
    async with asyncio.timeout(timeout):
        while not cond():  # type: ignore[operator]
            await asyncio.sleep(0.02)
    return time.monotonic() - t0


def _cli(cfg: Path, env: dict[str, str], *args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "app", "--config", str(cfg), *args], capture_output=True, text=True,
                       env=env, cwd=ROOT, timeout=120)  # fmt: skip
    return time.monotonic() - t0, r


def _tmux_time(cfg: Path, env: dict[str, str], pid: int) -> float | None:
    """SIGSTOP -> "not answering" on the real dashboard's screen, or None without tmux."""
    if shutil.which("tmux") is None:
        return None
    sock = f"llamaherd-bench-live-{os.getpid()}"
    envs = " ".join(f"{k}={shlex.quote(env[k])}" for k in ("XDG_STATE_HOME", "LLAMA_SERVER"))
    cmd = f"cd {shlex.quote(str(ROOT))} && exec env TERM=screen-256color LANG=C.UTF-8 {envs} " \
          f"{shlex.quote(sys.executable)} -m app --config {shlex.quote(str(cfg))}"  # fmt: skip
    subprocess.run(["tmux", "-L", sock, "-f", "/dev/null", "new-session", "-d", "-x", "120", "-y", "40", cmd],
                   check=True, timeout=10)  # fmt: skip

    def screen() -> str:
        return subprocess.run(["tmux", "-L", sock, "capture-pane", "-p"], capture_output=True, text=True,
                              timeout=10).stdout  # fmt: skip

    try:
        deadline = time.monotonic() + 60
        while "running" not in screen() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(2.0)
        os.kill(pid, signal.SIGSTOP)
        t0 = time.monotonic()
        while "not answering" not in screen():
            if time.monotonic() - t0 > 30:
                return float("inf")
            time.sleep(0.05)
        return time.monotonic() - t0
    finally:
        os.kill(pid, signal.SIGCONT)
        subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True, timeout=10)


async def run(trials: int) -> None:
    binary = find_llama_server()
    if binary is None:
        raise SystemExit(HOW_TO_GET)
    d = workdir()
    preset = d / "models.ini"
    preset.write_text(preset_text(dict(tiny_models(d))))
    os.environ["XDG_STATE_HOME"] = str(d / "state")
    env = {**os.environ, "LLAMA_SERVER": binary, "PYTHONPATH": str(ROOT)}
    cfg_path = d / "config.toml"
    cfg_path.write_text(f'[[machines]]\nname = "here"\npreset = "{preset}"\nprogram = "{binary}"\n')
    cfg = MachineConfig(name="here", preset=str(preset), program=binary)
    starter = Machine(cfg, lambda ev: None)
    assert starter.manager is not None
    rec, _ = await starter.manager.start()
    await starter.close()
    pid = rec.pid
    m = Machine(cfg, lambda ev: None)
    m.start()
    try:
        await _until(lambda: m.view.router_state is RouterState.RUNNING and m.view.stream == "sse", 30)
        stop_t, cont_t, status_t = [], [], []
        for _ in range(trials):
            await asyncio.sleep(2.0)
            os.kill(pid, signal.SIGSTOP)
            stop_t.append(await _until(lambda: m.view.router_state is RouterState.NOT_ANSWERING, 30))
            t0 = time.monotonic()
            probe = Machine(cfg, lambda ev: None)
            st = await machine_status(probe)
            await probe.close()
            status_t.append(time.monotonic() - t0)
            assert st["router"] == "not answering", st
            os.kill(pid, signal.SIGCONT)
            cont_t.append(await _until(lambda: m.view.router_state is RouterState.RUNNING, 30))
        print(f"follower: SIGSTOP -> not answering {_fig(stop_t)}; SIGCONT -> running {_fig(cont_t)}")
        print(f"status (in-process) on a stopped router: {_fig(status_t)}")
        os.kill(pid, signal.SIGSTOP)
        try:
            took, r = await asyncio.to_thread(_cli, cfg_path, env, "status")
            print(f"`llamaherd status` (real command, start-up included): {took:.1f} s, says "
                  f"{'not answering' if 'not answering' in r.stdout else r.stdout.strip()[:80]!r}")  # fmt: skip
            took, r = await asyncio.to_thread(_cli, cfg_path, env, "load", "here", "alpha", "--wait")
            print(f"`llamaherd load --wait`: {took:.1f} s, exit {r.returncode}: {r.stderr.strip()[:120]}")
            base, _ = await asyncio.to_thread(_cli, cfg_path, env, "--help")
            print(f"(interpreter start-up alone, `llamaherd --help`: {base:.1f} s)")
        finally:
            os.kill(pid, signal.SIGCONT)
    finally:
        await m.close()
    dash = await asyncio.to_thread(_tmux_time, cfg_path, env, pid)
    print("dashboard (tmux): " + ("skipped, no tmux" if dash is None else f"SIGSTOP -> not answering {dash:.1f} s"))
    os.kill(pid, signal.SIGKILL)


def _fig(xs: list[float]) -> str:
    s = sorted(xs)
    return f"median {s[len(s) // 2]:.1f} s, max {s[-1]:.1f} s (n={len(s)})"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=5)
    asyncio.run(run(ap.parse_args().trials))


if __name__ == "__main__":
    main()
