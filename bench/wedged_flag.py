"""How long a wedged child takes to be flagged in the dashboard (issue 35), and to be cleared when it answers again.

A real router (with --metrics) and the tiny model `alpha` loaded; the real app on the real Fleet, attached to it,
headless at 140x45, with the dashboard's default activity poll ([ui] activity_every, 2 s) and no probe. The child
serving alpha is stopped (SIGSTOP: to a client, a wedged child looks the same: listed loaded, every request to it
hangs). Measured from the signal:

- the fleet's AnsweringChanged event (two polls in a row unanswered, each bounded by POLL_TIMEOUT plus the link's
  round trips: activity/answering.py);
- "not answering" painted on the model's row;
- after SIGCONT, the row painted without it.

Expected: the model's next poll (an idle model is asked every IDLE_ROUNDS rounds, so up to IDLE_ROUNDS x
activity_every away), then SILENT_ROUNDS polls that each wait their whole bound (a suspect is asked every round, and
a round that took its bound is followed at once by the next): at most IDLE_ROUNDS x activity_every + SILENT_ROUNDS x
POLL_TIMEOUT. The rounds stop the child at different points of the poll's cycle (k x activity_every after the
previous round's end, for round k), so the figures spread over that range.

Run: python -m bench.wedged_flag [ROUNDS]
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from typing import Any

import psutil

from app.config import Config, MachineConfig
from app.services.activity.answering import SILENT_ROUNDS
from app.services.activity.poll import IDLE_ROUNDS, POLL_TIMEOUT
from app.services.core.fleet_events import AnsweringChanged, FleetEvent
from app.services.core.router_types import ModelState
from app.services.fleet import Fleet
from app.services.lifecycle.llama_server_binary import HOW_TO_GET, find_llama_server
from app.ui.app import make_app
from bench.common import figures, tiny_models, workdir
from tests.helpers.router import RouterProc, preset_text
from tests.helpers.screen import screen_text

MACHINE, MODEL = "box", "alpha"


def child_of(router: RouterProc, model: str) -> int:
    for p in psutil.Process(router.pid).children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if f"--alias {model} " in " ".join(p.cmdline()) + " ":
                return int(p.pid)
    raise SystemExit(f"no child for {model} under the router")


def row_says_not_answering(app: Any) -> bool:
    return any(MODEL in row and "not answering" in row for row in screen_text(app).splitlines())


async def until(cond: Any, within: float) -> float:
    """Seconds until `cond()` holds, looked at every 20 ms; `within` at most."""
    t0 = time.monotonic()
    while not cond():
        if time.monotonic() - t0 > within:
            raise SystemExit("not seen within the bound: the figure would be meaningless")
        await asyncio.sleep(0.02)
    return time.monotonic() - t0


async def one_round(app: Any, fleet: Fleet, pid: int, q: asyncio.Queue[FleetEvent]) -> tuple[float, float, float]:
    while not q.empty():
        q.get_nowait()
    flagged: list[float] = []

    async def watch_events() -> None:
        while True:
            ev = await q.get()
            if isinstance(ev, AnsweringChanged) and ev.model == MODEL and not ev.answering:
                flagged.append(time.monotonic())
                return

    watcher = asyncio.create_task(watch_events())
    bound = 3 * (fleet.config.ui.activity_every + SILENT_ROUNDS * POLL_TIMEOUT) + 10
    t0 = time.monotonic()
    os.kill(pid, signal.SIGSTOP)
    try:
        painted = await until(lambda: row_says_not_answering(app), bound)
        await asyncio.wait_for(watcher, bound)
    finally:
        os.kill(pid, signal.SIGCONT)
    cleared = await until(lambda: not row_says_not_answering(app), bound)
    return flagged[0] - t0, painted, cleared


async def main(rounds: int) -> None:
    binary = find_llama_server()
    if binary is None:
        raise SystemExit(HOW_TO_GET)
    d = workdir()
    models = tiny_models(d)
    preset = d / "r.ini"
    preset.write_text(preset_text({MODEL: models[MODEL]}))
    router = RouterProc(binary=binary, preset=preset, log=d / "r.log", extra_args=["--metrics"]).start(wait=False)
    try:
        router.wait_healthy(timeout=30)
        cfg = Config(machines=(MachineConfig(name=MACHINE, url=router.url),))
        fleet = Fleet(cfg)
        app = make_app(cfg, fleet)
        async with app.run_test(size=(140, 45)) as pilot:
            q = fleet.subscribe()
            await until(lambda: fleet.view(MACHINE).stream == "sse", 30)
            await fleet.load(MACHINE, MODEL)
            await until(lambda: any(m.id == MODEL and m.state is ModelState.LOADED for m in fleet.models(MACHINE)), 30)
            await pilot.pause(2 * cfg.ui.activity_every)  # the poll has seen it answer
            pid = child_of(router, MODEL)
            got = []
            for k in range(rounds):
                await asyncio.sleep(k % IDLE_ROUNDS * cfg.ui.activity_every)  # another point of the poll's cycle
                got.append(await one_round(app, fleet, pid, q))
            fleet.unsubscribe(q)
    finally:
        router.stop()
    every = cfg.ui.activity_every
    most = IDLE_ROUNDS * every + SILENT_ROUNDS * POLL_TIMEOUT
    print(
        f"wedged child (SIGSTOP), dashboard defaults: poll every {every:g} s (an idle model every {IDLE_ROUNDS} "
        f"rounds), each bounded by {POLL_TIMEOUT:g} s (+ round trips), flagged after {SILENT_ROUNDS} silent polls: "
        f"expected {SILENT_ROUNDS * POLL_TIMEOUT:g} to {most:g} s"
    )
    print(figures("SIGSTOP -> AnsweringChanged (fleet event)", [f * 1000 for f, _, _ in got]))
    print(figures("SIGSTOP -> 'not answering' painted on the row", [p * 1000 for _, p, _ in got]))
    print(figures("SIGCONT -> the row painted without it", [c * 1000 for _, _, c in got]))


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 3))
