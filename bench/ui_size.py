"""A big router in the dashboard: first full paint, key latency during 1,000 status events, the fleet view and RSS.

One real router whose preset has N sections (all pointing at the same tiny model file), followed by the real Fleet
in the real app (App.run_test, headless). Targets (issue 11.5, 2 cores): 2,000 models first paint <= 500 ms and key
press p95 <= 50 ms during a 1,000-event burst; 20,000 models first paint <= 2 s, fleet view <= 2 s, RSS <= 150 MB.

The burst is fed through the Fleet's own event path as its followers send a status event: 1,000 ModelsUpdated
deltas (one model each), over about a second, while the cursor keys are pressed every 25 ms. A key's latency runs
from the key event to the refresh that paints it. The fleet view is timed from the `f` key to the paint after its
last row is in. RSS is this process's (the app and the bench), after all of it.

Run: python -m bench.ui_size            (both sizes, each in its own process)
     python -m bench.ui_size N_MODELS [N_EVENTS]
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import statistics
import subprocess
import sys
import time
from typing import Any

import psutil
from textual import events

from app.config import Config, MachineConfig
from app.services.core.fleet_events import FleetEvent, ModelsChanged, ModelsUpdated
from app.services.core.router_types import ModelState
from app.services.fleet import Fleet
from app.ui.app import make_app
from bench.common import figures, start_router, tiny_models, workdir


async def main(n_models: int, n_events: int) -> None:
    d = workdir()
    alpha = tiny_models(d)["alpha"]
    t = time.perf_counter()
    router = start_router(d, {f"model-{i:03d}": alpha for i in range(n_models)}, healthy_within=300)
    print(f"router with {n_models} models started in {time.perf_counter() - t:.1f} s (its own preset read)")
    cfg = Config(machines=(MachineConfig(name="big", url=router.url),))
    try:
        fleet = Fleet(cfg)
        listed: list[float] = []
        emit = fleet._emit

        def stamp_list(ev: FleetEvent) -> None:
            if not listed and isinstance(ev, ModelsChanged) and len(ev.models) >= n_models:
                listed.append(time.perf_counter())  # the router's whole list, read and parsed by the fleet
            emit(ev)

        fleet._emit = stamp_list  # type: ignore[method-assign]
        for m in fleet._machines.values():
            m.emit = stamp_list
        app = make_app(cfg, fleet)
        painted = asyncio.Event()
        t0, c0 = time.perf_counter(), time.process_time()
        async with app.run_test(size=(120, 40)) as pilot:
            table = app.dashboard.model_table
            t_mount = time.perf_counter()
            while len(table.rows_now) < n_models:
                await asyncio.sleep(0.001)
            t_rows = time.perf_counter()
            table.call_after_refresh(painted.set)
            await painted.wait()
            t_paint = time.perf_counter()
            cpu_paint = time.process_time() - c0
            rss_paint = psutil.Process().memory_info().rss
            print(
                f"first full paint of {n_models} rows: {(t_paint - t0) * 1000:.0f} ms from start "
                f"(app mounted {(t_mount - t0) * 1000:.0f} ms, the list in the fleet at {(listed[0] - t0) * 1000:.0f}"
                f" ms, rows in {(t_rows - t0) * 1000:.0f} ms; from the list to the paint "
                f"{(t_paint - listed[0]) * 1000:.0f} ms); CPU of this process until then {cpu_paint * 1000:.0f} ms"
            )

            # ---- key latency during a burst ----
            table.focus()
            await pilot.pause(0.2)
            base = fleet.models("big")
            stamps: list[float] = []
            moves = 0

            def moved() -> None:
                stamps.append(time.perf_counter())

            for name in ("action_cursor_down", "action_cursor_up"):
                original = getattr(table, name)

                def wrapped(original: Any = original) -> None:
                    nonlocal moves
                    moves += 1
                    original()
                    table.call_after_refresh(moved)

                setattr(table, name, wrapped)

            async def burst() -> None:
                # As the fleet does for a status event: the one model it changed.
                current = list(base)
                per_tick = max(1, n_events // 100)
                for i in range(0, n_events, per_tick):
                    for j in range(i, min(n_events, i + per_tick)):
                        k = j % len(base)
                        state = ModelState.LOADING if (j // len(base)) % 2 == 0 else ModelState.UNLOADED
                        current[k] = dataclasses.replace(current[k], state=state)
                        fleet._emit(ModelsUpdated("big", (current[k],)))  # the followers' path to every subscriber
                    await asyncio.sleep(0.01)

            sent: list[float] = []
            burst_task = asyncio.create_task(burst())
            t_burst = time.perf_counter()
            i = 0
            while not burst_task.done():
                key = "down" if i % 2 == 0 else "up"
                i += 1
                ev = events.Key(key, None)
                ev.set_sender(app)
                sent.append(time.perf_counter())
                app._driver.send_message(ev)  # type: ignore[union-attr]  # as a terminal would deliver it
                await asyncio.sleep(0.025)
            burst_took = time.perf_counter() - t_burst
            deadline = time.perf_counter() + 10
            while len(stamps) < len(sent) and time.perf_counter() < deadline:
                await pilot.pause(0.05)
            flushes = app.flushes

            # ---- the fleet view ----
            fleet_table = app.dashboard.fleet_table
            shown = asyncio.Event()
            await pilot.pause(0.5)  # what the burst left to paint is painted
            ev = events.Key("f", "f")
            ev.set_sender(app)
            t_f, c_f = time.perf_counter(), time.process_time()
            app._driver.send_message(ev)  # type: ignore[union-attr]  # as a terminal would deliver it
            while len(fleet_table.rows_now) < n_models:
                await asyncio.sleep(0.001)
            fleet_rows = time.perf_counter() - t_f
            fleet_table.call_after_refresh(shown.set)
            await shown.wait()
            fleet_took = time.perf_counter() - t_f
            fleet_cpu = time.process_time() - c_f
            rss = psutil.Process().memory_info().rss
    finally:
        router.stop()
    n = min(len(sent), len(stamps))
    lat = [(stamps[k] - sent[k]) * 1000 for k in range(n)]
    print(f"burst of {n_events} status events took {burst_took:.2f} s; repaints from fleet events so far: {flushes}")
    print(f"keys sent: {len(sent)}, cursor moves handled: {moves}, painted: {len(stamps)}")
    if lat:
        print(figures("key press -> cursor move painted, during the burst", lat))
        print(f"  mean {statistics.mean(lat):.1f} ms")
    took, rows_in = fleet_took * 1000, fleet_rows * 1000
    print(
        f"fleet view of {n_models} rows: {took:.0f} ms from the key to its paint (rows in {rows_in:.0f} ms; "
        f"CPU {fleet_cpu * 1000:.0f} ms)"
    )
    print(f"load average at the end: {os.getloadavg()[0]:.1f} (2 cores; figures under shared load)")
    print(
        f"RSS of the dashboard process (app + bench) with {n_models} models: {rss / 2**20:.0f} MB "
        f"(after the first paint, before the burst and the fleet view: {rss_paint / 2**20:.0f} MB)"
    )


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    if args:
        asyncio.run(main(args[0], args[1] if len(args) > 1 else 1000))
    else:
        for n in (2000, 20000):  # each in a process of its own: one's memory is not the other's
            subprocess.run([sys.executable, "-m", "bench.ui_size", str(n)], check=True)
