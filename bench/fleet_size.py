"""A fleet of N machines in one terminal: N real routers attached, 20 preset models each, the dashboard 160×50.

Figures: time from the app's start until every machine's router is running with its 20 models in the app's state
(in-process, App.run_test, painted to nothing), then the real `python -m app` in a real tmux pane: idle CPU (process
time / wall time, after a settle) and RSS, and how many machines the machines pane shows on screen.

Targets (issue 36): 50 machines × 20 models: up ≤ 3 s, idle ≤ 1.5 % of a core, RSS ≤ 100 MB, all 50 visible.

Run: python -m bench.fleet_size [N] [SECONDS]     (default: 50 machines, 40 s idle)
"""

from __future__ import annotations

import asyncio
import re
import sys
import time
from pathlib import Path

from app.config import Config, MachineConfig
from app.services.core.router_types import RouterState
from app.services.fleet import Fleet
from app.ui.app import make_app
from bench.common import start_router, tiny_models, workdir
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


def main(n: int, seconds: float) -> None:
    d = workdir()
    routers = start_routers(n, d)
    try:
        machines = tuple(MachineConfig(name=f"box{i}", url=r.url) for i, r in enumerate(routers))
        cfg = d / "config.toml"
        cfg.write_text("".join(f'[[machines]]\nname = "{m.name}"\nurl = "{m.url}"\n\n' for m in machines))
        up = asyncio.run(time_to_up(Config(machines=machines)))
        idle = tmux_idle(cfg, seconds, settle=SETTLE)
        share, rss, screen = idle.share, idle.rss_mb, idle.screen
    finally:
        for r in routers:
            r.stop()
    shown = {int(x) for x in re.findall(r"\bbox(\d+)\b", screen)}
    print(f"fleet of {n} attached routers × {MODELS_EACH} models, 160×50:")
    print(f"  all up (every router running, every model listed, in-process): {up:.2f} s")
    print(f"  idle in tmux over {seconds:.0f} s: CPU {share * 100:.2f} % of one core, RSS {rss:.0f} MB")
    print(f"  machines named on screen: {len(shown)} of {n}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50, float(sys.argv[2]) if len(sys.argv) > 2 else 40.0)
