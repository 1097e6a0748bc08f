"""Where the dashboard's memory goes over minutes of real traffic: tracemalloc snapshots and object counts.

Runs the real app (headless, 140x45) on the real Fleet with tracemalloc on, while either the router cycle of
bench/cycle.py runs against a managed local router ("plain"), or the demo fleet runs its traffic ("demo"). After a
warm-up, a snapshot; at the end another; printed: the allocation sites that grew most (with their tracebacks'
innermost frames), the object types whose counts grew, and RSS at both ends.

Run: python -m bench.mem_growth [plain|demo] [MINUTES] [WARMUP_SECONDS]
"""

from __future__ import annotations

import asyncio
import functools
import gc
import os
import sys
import threading
import time
import tracemalloc
from collections import Counter
from typing import Any

import psutil
from textual.app import App
from textual.widget import Widget

from app.config import Config
from app.services.fleet import Fleet
from app.ui.app import make_app
from bench.cycle import Cycle, managed_config


def type_counts() -> Counter[str]:
    gc.collect()
    return Counter(type(o).__qualname__ for o in gc.get_objects())


def lru_sizes() -> dict[str, tuple[int, int]]:
    """Entries held by every functools.lru_cache alive, by qualified name: the bounded caches that fill."""
    gc.collect()
    return {
        f"{o.__module__}.{o.__qualname__}": (o.cache_info().currsize, o.cache_info().maxsize or 0)
        for o in gc.get_objects()
        if isinstance(o, functools._lru_cache_wrapper) and o.cache_info().maxsize
    }


def widget_counts(app: App[Any]) -> tuple[Counter[str], Counter[str]]:
    """Widgets alive (attached or not), and those in the app's DOM, by type."""
    gc.collect()
    alive = Counter(type(o).__qualname__ for o in gc.get_objects() if isinstance(o, Widget))
    mounted = Counter(type(w).__qualname__ for w in app.screen.walk_children(with_self=True))
    return alive, mounted


async def watch(cfg: Config, minutes: float, warmup: float, driver: asyncio.Task[None] | None) -> None:
    fleet = Fleet(cfg)
    app = make_app(cfg, fleet)
    proc = psutil.Process()
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.pause(warmup)
        snap1 = tracemalloc.take_snapshot()
        types1 = type_counts()
        widgets1 = widget_counts(app)
        lru1 = lru_sizes()
        rss1, t1 = proc.memory_info().rss, time.monotonic()
        traced = tracemalloc.get_traced_memory()[0] / 2**20
        print(f"after {warmup:.0f} s warm-up: RSS {rss1 / 2**20:.1f} MB, traced {traced:.1f} MB")
        end = t1 + minutes * 60
        while time.monotonic() < end:
            await pilot.pause(min(30.0, end - time.monotonic()))
            print(f"  t+{time.monotonic() - t1:4.0f} s RSS {proc.memory_info().rss / 2**20:.1f} MB "
                  f"traced {tracemalloc.get_traced_memory()[0] / 2**20:.1f} MB", flush=True)  # fmt: skip
        snap2 = tracemalloc.take_snapshot()
        types2 = type_counts()
        widgets2 = widget_counts(app)
        lru2 = lru_sizes()
        rss2 = proc.memory_info().rss
        print("snapshots taken; leaving the app", flush=True)
    if driver is not None:
        driver.cancel()
    keep = [tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, "<frozen importlib._bootstrap>")]
    diff = snap2.filter_traces(keep).compare_to(snap1.filter_traces(keep), "traceback")
    span = (time.monotonic() - t1) / 60
    print(f"\nover {span:.1f} min: RSS {rss1 / 2**20:.1f} -> {rss2 / 2**20:.1f} MB")
    print("allocation sites that grew most, grouped by (innermost frame of ours, innermost frame) (size, count):")
    grouped: Counter[str] = Counter()
    counts: Counter[str] = Counter()
    for st in diff:
        frames = list(st.traceback)  # innermost last
        ours = next((f for f in reversed(frames) if "/app/" in f.filename or "/bench/" in f.filename), None)
        inner = frames[-1]
        key = f"{_short(inner.filename)}:{inner.lineno}"
        if ours is not None and ours is not inner:
            key += f" <- {_short(ours.filename)}:{ours.lineno}"
        grouped[key] += st.size_diff
        counts[key] += st.count_diff
    for key, size in grouped.most_common(25):
        if size <= 0:
            break
        print(f"  {size / 1024:+9.1f} KiB {counts[key]:+7d}  {key}")
    print("object types whose counts grew most:")
    for name, n in (types2 - types1).most_common(12):
        print(f"  {n:+7d} {name}")
    print("lru caches that grew (entries: before -> after / bound):")
    for name in sorted(lru2, key=lambda n: lru1.get(n, (0, 0))[0] - lru2[n][0]):
        (before, _), (after, bound) = lru1.get(name, (0, 0)), lru2[name]
        if after > before:
            print(f"  {before:6d} -> {after:6d} / {bound:6d}  {name}")
    for label, a, b in (("widgets alive", widgets1[0], widgets2[0]), ("widgets on screen", widgets1[1], widgets2[1])):
        grew = {k: b[k] - a[k] for k in b if b[k] != a[k]}
        print(f"{label}: {sum(a.values())} -> {sum(b.values())}; changed: {grew}")


def _short(filename: str) -> str:
    for cut in ("site-packages/", "/app/", "/bench/"):
        if cut in filename:
            return (cut.strip("/") + "/" if cut != "site-packages/" else "") + filename.split(cut)[-1]
    return filename


async def plain(minutes: float, warmup: float) -> None:
    cfg, _ = managed_config()
    cycle = Cycle(cfg)
    await cycle.start()
    driver = asyncio.create_task(cycle.run())
    try:
        await watch(cfg, minutes, warmup, driver)
    finally:
        driver.cancel()
        await cycle.stop()
    print(f"cycle steps: {cycle.steps}, failed steps: {len(cycle.failures)} {cycle.failures[:3]}")


async def demo(minutes: float, warmup: float) -> None:
    from app.demo import Traffic, prepare_and_start, stop_routers
    from bench.common import workdir

    d = workdir()
    os.environ["XDG_STATE_HOME"] = str(d / "state")  # router records of our own, never a real demo's
    cfg, started = await prepare_and_start(d / "demo")
    traffic = Traffic(cfg)
    # As `llamaherd demo --traffic` does: the traffic runs on its own loop in a thread of the dashboard's process.
    threading.Thread(target=lambda: asyncio.run(traffic.run()), name="demo-traffic", daemon=True).start()
    try:
        await watch(cfg, minutes, warmup, None)
    finally:
        await stop_routers(cfg, started)


if __name__ == "__main__":
    a = sys.argv[1:]
    which = a[0] if a else "plain"
    mins = float(a[1]) if len(a) > 1 else 4.0
    warm = float(a[2]) if len(a) > 2 else 60.0
    tracemalloc.start(int(os.environ.get("FRAMES", "1")))  # 1 frame: cheap enough to run under real traffic
    asyncio.run((plain if which == "plain" else demo)(mins, warm))
