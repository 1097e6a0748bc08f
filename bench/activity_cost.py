"""CPU cost of activity polling: N loaded models across R real routers (default 20 across 5, the issue's case),
polled every 2 s by the same poller the dashboard runs. Windows of the same length, idle, polling every model,
and polling one router's models only (what the dashboard does with one machine selected), measure the CPU time
of this process (llamaherd's side) and of the routers with their children (the answering side); the cost is the
difference from the idle window, as a percentage of one core. The models here serve nothing, so the poller asks
each one every IDLE_ROUNDS rounds (its default); a window with every model asked every round is what a fleet whose
models are all busy costs (2 s between polls, as the issue asks). Also the time one polling round takes.

Run: python -m bench.activity_cost [--routers 5] [--models 4] [--seconds 20] [--every 2]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import time

import httpx
import psutil

from app.services.activity.poll import IDLE_ROUNDS, ActivityPoller, Target
from app.services.lifecycle.llama_server_binary import HOW_TO_GET, find_llama_server
from app.services.router.client import RouterClient
from app.tinymodels import TinySpec, write_tiny_model
from bench.common import workdir
from tests.helpers.router import RouterProc, preset_text


def tree_cpu(pids: list[int]) -> float:
    """User + system CPU seconds of these processes and all their children."""
    total = 0.0
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            p = psutil.Process(pid)
            for q in (p, *p.children(recursive=True)):
                with contextlib.suppress(psutil.Error):
                    t = q.cpu_times()
                    total += t.user + t.system
    return total


async def window(seconds: float, routers: list[RouterProc], poller: ActivityPoller | None) -> tuple[float, float]:
    """(CPU seconds of this process, CPU seconds of the routers) over `seconds`, polling or not."""
    pids = [r.pid for r in routers]
    own0, routers0 = time.process_time(), tree_cpu(pids)
    task = asyncio.create_task(poller.run()) if poller else None
    await asyncio.sleep(seconds)
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    return time.process_time() - own0, tree_cpu(pids) - routers0


async def main(n_routers: int, per_router: int, seconds: float, every: float) -> None:
    binary = find_llama_server()
    if binary is None:
        raise SystemExit(HOW_TO_GET)
    d = workdir()
    gguf = write_tiny_model(d / "tiny.gguf", TinySpec(name="tiny", seed=1))
    routers: list[RouterProc] = []
    clients: list[RouterClient] = []
    try:
        for i in range(n_routers):
            preset = d / f"r{i}.ini"
            preset.write_text(preset_text({f"m{j}": gguf for j in range(per_router)}))
            r = RouterProc(binary=binary, preset=preset, log=d / f"r{i}.log", models_max=per_router,
                           extra_args=["--metrics"])  # fmt: skip
            routers.append(r.start())
        t0 = time.monotonic()
        async with httpx.AsyncClient(timeout=30) as http:
            for r in routers:
                for j in range(per_router):
                    await http.post(f"{r.url}/models/load", json={"model": f"m{j}"})
        for r in routers:
            for j in range(per_router):
                await asyncio.to_thread(r.wait_model, f"m{j}", {"loaded"}, 120.0)
        print(f"{n_routers * per_router} models loaded on {n_routers} routers in {time.monotonic() - t0:.1f} s")
        clients = [RouterClient(r.url, name=f"r{i}") for i, r in enumerate(routers)]
        targets = [Target(f"r{i}", c, tuple(f"m{j}" for j in range(per_router))) for i, c in enumerate(clients)]
        poller = ActivityPoller(lambda: targets, every=every)
        # One round first: the slot counts are read once per load, not in the measured steady state.
        rounds = await poller.poll()
        assert sum(len(ev.models) for ev in rounds) == n_routers * per_router, rounds
        round_ms = []
        poller.idle_rounds = 1  # a full round: every model asked
        for _ in range(5):
            t = time.monotonic()
            await poller.poll()
            round_ms.append((time.monotonic() - t) * 1000)
        poller.idle_rounds = IDLE_ROUNDS
        idle_own, idle_routers = await window(seconds, routers, None)
        poll_own, poll_routers = await window(seconds, routers, poller)
        poller.idle_rounds = 1  # every model asked every round: as if all were busy
        busy_own, busy_routers = await window(seconds, routers, poller)
        poller.idle_rounds = IDLE_ROUNDS
        # The dashboard polls only what it shows: one selected machine (the fleet view shows them all).
        poller.only = frozenset({"r0"})
        await poller.poll()  # withdraws the others' figures, as the dashboard's first round after a switch does
        one_own, one_routers = await window(seconds, routers, poller)
        own = (poll_own - idle_own) / seconds * 100
        answering = (poll_routers - idle_routers) / seconds * 100
        load1 = psutil.getloadavg()[0]
        print(
            f"polling {n_routers * per_router} loaded models on {n_routers} routers every {every:g} s, "
            f"{seconds:g} s windows (load average {load1:.1f} on {psutil.cpu_count()} cores, shared):"
        )
        print(f"  llamaherd (this process), idle models asked every {IDLE_ROUNDS} rounds: {own:.2f} % of a core"
              f" (idle {idle_own / seconds * 100:.2f} %, "
              f"polling {poll_own / seconds * 100:.2f} %)")  # fmt: skip
        print(f"  every model asked every round (as if all were busy): {(busy_own - idle_own) / seconds * 100:.2f} % "
              f"of a core here, {(busy_routers - idle_routers) / seconds * 100:.2f} % in the routers")  # fmt: skip
        print(f"  routers + children answering: {answering:.2f} % of a core (idle {idle_routers / seconds * 100:.2f}"
              f" %, polling {poll_routers / seconds * 100:.2f} %)")  # fmt: skip
        print(f"  the dashboard with one machine of {n_routers} selected ({per_router} models): "
              f"{(one_own - idle_own) / seconds * 100:.2f} % of a core here, "
              f"{(one_routers - idle_routers) / seconds * 100:.2f} % in the routers")  # fmt: skip
        print(f"  one full round (every model asked): median {sorted(round_ms)[2]:.1f} ms, max {max(round_ms):.1f} ms")
    finally:
        for c in clients:
            await c.aclose()
        for r in routers:
            r.stop()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--routers", type=int, default=5)
    ap.add_argument("--models", type=int, default=4, help="loaded models per router")
    ap.add_argument("--seconds", type=float, default=20.0, help="length of each measured window")
    ap.add_argument("--every", type=float, default=2.0)
    a = ap.parse_args()
    asyncio.run(main(a.routers, a.models, a.seconds, a.every))
