"""`llamaherd history --since 24h` over 100,000 stored transitions: the query alone, the query plus the JSON lines
the command prints, and the real command as a new process (its interpreter start-up and imports INCLUDED), for two
spreads of the same 100,000 rows: over the last 7 days (the last day's share answered) and all within the last day
(every row answered). The same command asked for the last second (nothing to answer) is the process's start-up
alone: the difference is what answering costs. Wall time and, for the process, its CPU time (user + system, from
the child's rusage): on a shared machine the wall time also counts waiting for a core.

Run: python -m bench.history_query [--rows N] [--trials N]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

from app.services.history.store import HistoryRow, HistoryStore
from bench.common import figures, workdir

REASONS = ("requested", "ready", "evicted", "preset reload", "crashed", "requested")
ROOT = Path(__file__).resolve().parents[1]


def fill(path: Path, rows: int, span: float, now: float) -> None:
    rnd = random.Random(12)
    store = HistoryStore(str(path), clock=lambda: now)
    batch = []
    for i in range(rows):
        t = now - span * (i + 0.5) / rows
        model = f"model-{rnd.randrange(40)}"
        reason = REASONS[i % len(REASONS)]
        detail = "models_max limit reached, least recently used, for model-7" if reason == "evicted" else ""
        batch.append(HistoryRow(t, f"gpu-{i % 5}", "default", model, "loaded", "unloaded", reason, detail, f"b:{i}"))
        if len(batch) == 10_000:
            store.add_sync(batch)
            batch = []
    store.add_sync(batch)
    store.close()


async def in_process(path: Path, now: float, trials: int) -> tuple[dict[str, list[float]], int]:
    """Wall time, and CPU time of this process (the query runs in a worker thread; on a machine shared with other
    work the CPU time is what it costs, the wall time also what it waited)."""
    got: dict[str, list[float]] = {"rows": [], "rows cpu": [], "JSON lines": [], "JSON lines cpu": []}
    n = 0
    for _ in range(trials):
        store = HistoryStore(str(path), clock=lambda: now)
        await store.open()
        t0, c0 = time.perf_counter(), time.process_time()
        rows = await store.query(since=now - 86400)  # what the table and the h screen read
        t1, c1 = time.perf_counter(), time.process_time()
        out = io.BytesIO()  # what --json reads and prints
        out.write(await store.query_json(since=now - 86400))
        t2, c2 = time.perf_counter(), time.process_time()
        store.close()
        got["rows"].append((t1 - t0) * 1000)
        got["rows cpu"].append((c1 - c0) * 1000)
        got["JSON lines"].append((t2 - t1) * 1000)
        got["JSON lines cpu"].append((c2 - c1) * 1000)
        n = len(rows)
    return got, n


def command(d: Path, trials: int, since: str, *extra: str) -> tuple[list[float], list[float]]:
    """(wall ms, CPU ms) of `llamaherd history --since SINCE ...` run as a new process."""
    cfg = d / "config.toml"
    cfg.write_text('[[machines]]\nname = "gpu-0"\nurl = "http://127.0.0.1:9"\n')  # attached: no log to read
    env = {**os.environ, "XDG_STATE_HOME": str(d / "state"), "PYTHONPATH": str(ROOT)}
    wall, cpu = [], []
    for _ in range(trials):
        c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        r = subprocess.run(
            [sys.executable, "-m", "app", "--config", str(cfg), "history", "--since", since, *extra],
            capture_output=True, env=env, timeout=60, check=False,
        )  # fmt: skip
        wall.append((time.perf_counter() - t0) * 1000)
        c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append((c1.ru_utime - c0.ru_utime + c1.ru_stime - c0.ru_stime) * 1000)
        if r.returncode != 0:
            raise SystemExit(r.stderr.decode())
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--trials", type=int, default=5)
    a = ap.parse_args()
    for label, span in (("spread over 7 days", 7 * 86400.0), ("all within the last day", 86000.0)):
        d = workdir()
        path = d / "state" / "llamaherd" / "history.sqlite3"
        now = time.time()
        fill(path, a.rows, span, now)
        got, n = asyncio.run(in_process(path, now, a.trials))
        print(f"{a.rows:,} rows {label}; --since 24h answers {n:,}")
        for what, ms in got.items():
            print("  " + figures(what, ms))
        for what, since, extra in (("--since 24h --json", "24h", ("--json",)), ("--since 24h (table)", "24h", ()),
                                   ("--since 1s --json (start-up alone)", "1s", ("--json",))):  # fmt: skip
            wall, cpu = command(d, a.trials, since, *extra)
            print(f"  `llamaherd history {what}`, whole process, start-up included:")
            print("    " + figures("wall", wall))
            print("    " + figures("cpu", cpu))


if __name__ == "__main__":
    main()
