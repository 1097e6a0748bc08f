"""A fleet of N machines in one terminal: N real routers attached, 20 preset models each, the dashboard 160×50.

Figures: time from the app's start until every machine's router is running with its 20 models in the app's state
(in-process, App.run_test, painted to nothing), then the real `python -m app` in a real tmux pane: idle CPU (process
time / wall time, after a settle) and RSS, and how many machines the machines pane shows on screen.

Targets (issue 36): 50 machines × 20 models: up ≤ 3 s, idle ≤ 1.5 % of a core, RSS ≤ 100 MB, all 50 visible.

`--fleet-only`: the service layer alone instead (a Fleet with no UI, its events drained as the dashboard would, in
this process), its idle CPU over SECONDS after the settle: what the routers' liveness and list checks cost before
any painting. `--runs K` measures the idle K times (the routers started once) and prints each and the median.

Run: python -m bench.fleet_size [N] [SECONDS] [--fleet-only] [--runs K]     (default: 50 machines, 40 s idle, 1 run)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import time
from pathlib import Path

from app.config import Config, MachineConfig
from app.services.core.router_types import RouterState
from app.services.fleet import Fleet
from app.ui.app import make_app
from bench.common import drained_fleet, load_text, start_router, tiny_models, workdir
from bench.ui_idle_cpu import tmux_idle
from tests.helpers.router import RouterProc

ROOT = Path(__file__).resolve().parents[1]
MODELS_EACH = 20
SETTLE = 8.0


def start_routers(n: int, d: Path) -> list[RouterProc]:
    alpha = tiny_models(d)["alpha"]
    routers: list[RouterProc] = []
    for i in range(n):
        models: dict[str, Path | str] = {f"m{i}-{j}": alpha for j in range(1, MODELS_EACH + 1)}
        routers.append(start_router(d, models, name=f"r{i}"))
    return routers


async def time_to_up(config: Config) -> float:
    names = [m.name for m in config.machines]
    started = time.monotonic()
    app = make_app(config, Fleet(config))
    async with app.run_test(size=(160, 50)) as pilot:
        while True:
            ready = sum(
                1
                for n in names
                if app.state.get(n).view.router_state in (RouterState.RUNNING, RouterState.ATTACHED)
                and len(app.state.get(n).models) == MODELS_EACH
            )
            if ready == len(names):
                return time.monotonic() - started
            if time.monotonic() - started > 60:
                raise SystemExit(f"only {ready} of {len(names)} machines up after 60 s")
            await pilot.pause(0.01)


async def fleet_idle(config: Config, seconds: float) -> float:
    """The Fleet alone (no UI), its events drained: process CPU over wall time after the settle."""
    async with drained_fleet(config) as fleet:
        await asyncio.sleep(SETTLE)
        up = sum(1 for m in config.machines if len(fleet.models(m.name)) == MODELS_EACH)
        if up != len(config.machines):
            raise SystemExit(f"only {up} of {len(config.machines)} machines listed after {SETTLE:g} s")
        print(f"  (measuring pid {os.getpid()} for {seconds:.0f} s)", flush=True)
        c0, w0 = time.process_time(), time.monotonic()
        await asyncio.sleep(seconds)
        return (time.process_time() - c0) / (time.monotonic() - w0)


def main(n: int, seconds: float, fleet_only: bool, runs: int) -> None:
    d = workdir()
    routers = start_routers(n, d)
    shares: list[float] = []
    try:
        machines = tuple(MachineConfig(name=f"box{i}", url=r.url) for i, r in enumerate(routers))
        cfg = d / "config.toml"
        cfg.write_text("".join(f'[[machines]]\nname = "{m.name}"\nurl = "{m.url}"\n\n' for m in machines))
        config = Config(machines=machines)
        if fleet_only:
            print(f"fleet of {n} attached routers × {MODELS_EACH} models, the service layer alone (no UI):")
            for _ in range(runs):
                shares.append(asyncio.run(fleet_idle(config, seconds)))
                print(f"  idle over {seconds:.0f} s: CPU {shares[-1] * 100:.2f} % of one core ({load_text()})")
            print(f"  median of {runs}: {statistics.median(shares) * 100:.2f} % of one core")
            return
        up = asyncio.run(time_to_up(config))
        print(f"fleet of {n} attached routers × {MODELS_EACH} models, 160×50:")
        print(f"  all up (every router running, every model listed, in-process): {up:.2f} s")
        for _ in range(runs):
            idle = tmux_idle(cfg, seconds, settle=SETTLE)
            shares.append(idle.share)
            shown = {int(x) for x in re.findall(r"\bbox(\d+)\b", idle.screen)}
            print(f"  idle in tmux over {seconds:.0f} s: CPU {idle.share * 100:.2f} % of one core, "
                  f"RSS {idle.rss_mb:.0f} MB, machines named on screen: {len(shown)} of {n} "
                  f"({load_text()})")  # fmt: skip
        if runs > 1:
            print(f"  median idle of {runs}: {statistics.median(shares) * 100:.2f} % of one core")
    finally:
        for r in routers:
            r.stop()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("n", nargs="?", type=int, default=50, help="machines (default 50)")
    ap.add_argument("seconds", nargs="?", type=float, default=40.0, help="idle measured over (default 40)")
    ap.add_argument("--fleet-only", action="store_true", help="the service layer alone, no UI")
    ap.add_argument("--runs", type=int, default=1, help="idle measurements (default 1)")
    a = ap.parse_args()
    main(a.n, a.seconds, a.fleet_only, a.runs)
