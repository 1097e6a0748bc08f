"""A fleet of N ssh machines in one terminal: one real OpenSSH sshd on 127.0.0.1 (tests/helpers/sshd.py) reached as
N machine entries, each with a router key of its own, so N managed routers of 20 preset models each, started over
ssh before the dashboard and adopted by it, each machine on its own ssh connection with its own remote agent.

Figures: time from the app's start until every machine's router is running with its 20 models in the app's state
(in-process, App.run_test, painted to nothing); then the real `python -m app` in a real tmux pane 160×50, idle:
its CPU (process time over wall time, after a settle), its RSS, and the ssh sessions sshd started meanwhile (its
"Starting session:" lines: each a channel that ran a command and one start of the user's login shell; the
dashboard's schedule runs inside each machine's long-lived agent, so 0 are expected), and the far side's CPU
(sshd, the agents and the routers' log tails; the routers' own CPU is not the dashboard's and is left out).

Targets (issue 36): 20 ssh machines up ≤ 5 s, 0 idle remote sessions, idle ≤ 1.5 % of a core.

Run: python -m bench.fleet_size_ssh [N] [SECONDS] [--runs K]     (default: 20 machines, 30 s idle, 1 run)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from pathlib import Path

import psutil

from app.config import Config, load_config
from app.services.core.router_types import RouterState
from app.services.fleet import Fleet
from app.services.lifecycle.llama_server_binary import HOW_TO_GET, find_llama_server
from bench.common import drained_fleet, load_text, tiny_models, workdir
from bench.fleet_size import MODELS_EACH, SETTLE, time_to_up
from bench.ui_idle_cpu import tmux_idle
from tests.helpers.herd import Herd
from tests.helpers.router import preset_text
from tests.helpers.sshd import SshdUnavailable, SshServer, start_sshd


def config_text(server: SshServer, n: int, program: str, d: Path) -> str:
    alpha = tiny_models(d)["alpha"]
    out = []
    for i in range(n):
        preset = d / f"box{i}.ini"
        preset.write_text(preset_text({f"m{i}-{j}": alpha for j in range(1, MODELS_EACH + 1)}))
        vals = {
            "name": f"box{i}", "host": server.host, "port": server.port, "user": server.user,
            "identity_file": server.client_key, "known_hosts": server.known_hosts, "router": f"bench-fleet-{i}",
            "program": program, "preset": str(preset),
        }  # fmt: skip
        out.append("[[machines]]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in vals.items()))
    return "\n".join(out)


async def start_all(config: Config) -> float:
    """Every machine's router started over ssh (as `llamaherd start` would), in parallel; the seconds it took."""
    fleet = Fleet(config)
    t0 = time.monotonic()
    try:
        await asyncio.gather(*(fleet.start_router(m.name) for m in config.machines))
        return time.monotonic() - t0
    finally:
        await fleet.close()


def sessions(server: SshServer) -> int:
    return server.log_text().count("Starting session:")


def far_cpu(server: SshServer, routers: set[int]) -> float:
    """CPU seconds of sshd and everything below it but the routers and their model children."""
    total = 0.0
    try:
        procs = [psutil.Process(server.pid), *psutil.Process(server.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0.0
    for p in procs:
        if p.pid in routers:
            continue
        try:
            t = p.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += t.user + t.system
    return total


def main(n: int, seconds: float, runs: int) -> None:
    program = find_llama_server()
    if program is None:
        raise SystemExit(HOW_TO_GET)
    d = workdir()
    os.environ["XDG_STATE_HOME"] = str(d / "state")  # this process's history and records, not the user's
    try:
        server = start_sshd(d / "sshd", extra=(f"MaxStartups {n + 10}", f"MaxSessions {4 * n}"))
    except SshdUnavailable as e:
        raise SystemExit(str(e)) from None
    herd = Herd(root=d, config=d / "config.toml")
    try:
        herd.write_config(config_text(server, n, program, d))
        config = load_config(herd.config)
        started = asyncio.run(start_all(config))
        routers = set(herd.router_pids())
        routers |= {c.pid for pid in routers for c in psutil.Process(pid).children(recursive=True)}
        up = asyncio.run(time_to_up(config))
        print(f"fleet of {n} ssh machines (one sshd, a router each) × {MODELS_EACH} models, 160×50:")
        print(f"  {n} routers started over ssh, in parallel: {started:.2f} s")
        print(f"  all up (every router adopted and running, every model listed, in-process): {up:.2f} s")
        shares: list[float] = []
        for _ in range(runs):
            s0, c0, w0 = sessions(server), far_cpu(server, routers), time.monotonic()
            idle = tmux_idle(herd.config, seconds, state=d / "state", settle=SETTLE)
            # The window's sessions: those of the settle (the dashboard connecting) are counted apart.
            opened = sessions(server) - s0
            far = (far_cpu(server, routers) - c0) / (time.monotonic() - w0)
            shares.append(idle.share)
            on_screen = sum(f"box{i}" in idle.screen for i in range(n))
            print(f"  idle in tmux over {seconds:.0f} s: CPU {idle.share * 100:.2f} % of one core, RSS "
                  f"{idle.rss_mb:.0f} MB, machines named on screen: {on_screen} of {n}; ssh sessions opened from "
                  f"start to quit: {opened} ({opened / n:.1f} a machine); far side (sshd, agents, tails) "
                  f"{far * 100:.2f} % of a core ({load_text()})")  # fmt: skip
        if runs > 1:
            print(f"  median idle of {runs}: {statistics.median(shares) * 100:.2f} % of one core")
        idle_sessions(server, config, seconds)
    finally:
        herd.stop_all()
        server.stop()


def idle_sessions(server: SshServer, config: Config, seconds: float) -> None:
    """The sessions opened while idle, after the start-up ones: a Fleet (what the dashboard holds) followed in
    this process, counted over the window after its settle."""

    async def run() -> tuple[int, float]:
        async with drained_fleet(config) as fleet:
            t0 = time.monotonic()
            while not all(fleet.view(m.name).router_state is RouterState.RUNNING for m in config.machines):
                if time.monotonic() - t0 > 60:
                    raise SystemExit("not every router seen running within 60 s")
                await asyncio.sleep(0.1)
            await asyncio.sleep(SETTLE)
            s0, c0, w0 = sessions(server), time.process_time(), time.monotonic()
            await asyncio.sleep(seconds)
            return sessions(server) - s0, (time.process_time() - c0) / (time.monotonic() - w0)

    opened, share = asyncio.run(run())
    print(f"  idle, the service layer alone (a Fleet, no UI) over {seconds:.0f} s after the start-up: ssh sessions "
          f"opened {opened}, CPU {share * 100:.2f} % of one core ({load_text()})")  # fmt: skip


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("n", nargs="?", type=int, default=20, help="machines (default 20)")
    ap.add_argument("seconds", nargs="?", type=float, default=30.0, help="idle measured over (default 30)")
    ap.add_argument("--runs", type=int, default=1, help="idle measurements of the dashboard (default 1)")
    a = ap.parse_args()
    main(a.n, a.seconds, a.runs)
