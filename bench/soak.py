"""Soak: the real dashboard left running in a real tmux pane (140x45), RSS and CPU sampled every 30 s.

"plain": `python -m app` on one managed local router while bench/cycle.py drives it from this process (loads,
completions, unloads, a failing model, preset reloads, a router restart every 50 steps). "demo": `python -m app
demo --traffic` (its three routers and its scenario). Printed: every sample, the CPU per minute, and the slope of
RSS over the second half (least squares, MB/hour) with the growth over that half. Targets: growth over the second
half of a 20-minute soak <= 2 MB (<= 6 MB/hour); the plain cycle <= 2 % of a core.

Run: python -m bench.soak [plain|demo] [MINUTES] [SAMPLE_SECONDS]   (make soak: both, 20 min each)
To tell what grows, "plain" takes SOAK_RESTART_EVERY (steps between router restarts, 50; 0: never) and
SOAK_LOG_LINES (the panel's scrollback, the config's default of 10,000 when unset) from the environment.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import psutil

from app.config import write_config
from bench.common import workdir

ROOT = Path(__file__).resolve().parents[1]


def slope_mb_per_hour(samples: list[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, MB) samples, in MB per hour."""
    n = len(samples)
    if n < 2:
        return 0.0
    mt = sum(t for t, _ in samples) / n
    mr = sum(r for _, r in samples) / n
    var = sum((t - mt) ** 2 for t, _ in samples)
    return sum((t - mt) * (r - mr) for t, r in samples) / var * 3600 if var else 0.0


class Pane:
    """A tmux server of our own running one command; stopped by its pid."""

    def __init__(self, cmd: str, env: dict[str, str]) -> None:
        self.sock = f"llamaherd-soak-{os.getpid()}"
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        full = f"cd {shlex.quote(str(ROOT))} && exec env TERM=screen-256color {exports} {cmd}"
        self._tmux("new-session", "-d", "-x", "140", "-y", "45", "-s", "soak", full)
        self.app_pid = int(self._tmux("display-message", "-p", "-t", "soak", "#{pane_pid}"))
        self.server_pid = int(self._tmux("display-message", "-p", "-t", "soak", "#{pid}"))

    def _tmux(self, *args: str) -> str:
        res = subprocess.run(["tmux", "-L", self.sock, "-f", "/dev/null", *args], capture_output=True, text=True)
        return res.stdout.strip()

    def keys(self, *keys: str) -> None:
        self._tmux("send-keys", "-t", "soak", *keys)

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", "soak")

    def stop(self, quit_first: bool) -> None:
        if quit_first:  # let the app leave the way an operator does (the demo then stops its routers)
            self.keys("q")
            with contextlib.suppress(psutil.NoSuchProcess, psutil.TimeoutExpired):
                psutil.Process(self.app_pid).wait(30)
        for pid in (self.app_pid, self.server_pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def stop_leftovers(root: str) -> None:
    """Routers the demo started under `root` that outlived it (it was killed, not quit): stopped by pid."""
    for p in psutil.process_iter(["pid", "cmdline"]):
        if root in " ".join(p.info["cmdline"] or []) and p.pid != os.getpid():
            with contextlib.suppress(psutil.NoSuchProcess):
                p.kill()


def rss_split(pid: int) -> str:
    """RSS by kind (anonymous, file-backed, shared memory), from /proc: a file mapping (SQLite's memory map of the
    history) counts in RSS but is the OS's page cache, not the heap."""
    try:
        with open(f"/proc/{pid}/status") as f:
            kb = {k: int(v.split()[0]) for k, _, v in (ln.partition(":") for ln in f) if k.startswith("Rss")}
    except OSError:
        return ""
    return " ".join(f"{k[3:].lower()} {v / 1024:.1f}" for k, v in kb.items())


def log_lines(path: Path) -> int:
    with contextlib.suppress(OSError), path.open("rb") as f:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
    return 0


def cpu_seconds(p: psutil.Process) -> tuple[float, float]:
    """The app's own CPU seconds, and those of the commands it ran and waited for (a shell pipeline reading the
    log costs the machine as much as a second of rendering, but is not the app's own time)."""
    t = p.cpu_times()
    return float(t.user + t.system), float(t.children_user + t.children_system)


def sample(pane: Pane, minutes: float, every: float, settle: float) -> list[tuple[float, float, float, float]]:
    """(seconds since start, RSS MB, CPU seconds, its commands' CPU seconds) every `every` seconds, after `settle`
    seconds."""
    p = psutil.Process(pane.app_pid)
    time.sleep(settle)
    out: list[tuple[float, float, float, float]] = []
    t0 = time.monotonic()
    end = t0 + minutes * 60
    while True:
        now = time.monotonic()
        out.append((now - t0, p.memory_info().rss / 2**20, *cpu_seconds(p)))
        print(f"  t={now - t0:6.0f} s  RSS {out[-1][1]:6.1f} MB ({rss_split(p.pid)})  CPU {out[-1][2]:7.1f} s"
              f" (its commands {out[-1][3]:.1f} s)", flush=True)  # fmt: skip
        if now >= end:
            return out
        time.sleep(min(every, max(0.0, end - now)))


def report(label: str, samples: list[tuple[float, float, float, float]]) -> None:
    print(f"\n{label}: {len(samples)} samples over {samples[-1][0] / 60:.1f} min")
    print("  CPU per minute (% of one core):", end="")
    per_min: list[float] = []
    i = 0
    for j in range(1, len(samples)):
        if samples[j][0] - samples[i][0] >= 59.5 or j == len(samples) - 1:
            pct = (samples[j][2] - samples[i][2]) / (samples[j][0] - samples[i][0]) * 100
            per_min.append(pct)
            print(f" {pct:.1f}", end="")
            i = j
    total = (samples[-1][2] - samples[0][2]) / samples[-1][0] * 100
    commands = (samples[-1][3] - samples[0][3]) / samples[-1][0] * 100
    print(f"\n  CPU overall: {total:.2f} % of one core; the commands it ran: {commands:.2f} % more")
    half = [(t, r) for t, r, *_ in samples if t >= samples[-1][0] / 2]
    growth = half[-1][1] - half[0][1]
    peak = max(r for _, r, *_ in samples)
    print(f"  RSS: first {samples[0][1]:.1f} MB, last {samples[-1][1]:.1f} MB, peak {peak:.1f} MB")
    print(
        f"  RSS over the second half: slope {slope_mb_per_hour(half):+.1f} MB/hour, "
        f"growth {growth:+.1f} MB ({half[0][1]:.1f} -> {half[-1][1]:.1f} MB, {len(half)} samples)"
    )
    # Growth by 5-minute window: bounded stores filling (the scrollback, caches) level off; a leak does not.
    step = max(1, round(300 / (samples[1][0] - samples[0][0]))) if len(samples) > 1 else 1
    ends = [r for _, r, *_ in samples[::step]] + ([samples[-1][1]] if (len(samples) - 1) % step else [])
    print("  RSS growth by 5-minute window (MB):", " ".join(f"{b - a:+.1f}" for a, b in pairwise(ends)))


def plain(minutes: float, every: float) -> None:
    from bench.cycle import Cycle, managed_config

    cfg, d = managed_config()
    if "SOAK_LOG_LINES" in os.environ:
        cfg = replace(cfg, ui=replace(cfg.ui, log_lines=int(os.environ["SOAK_LOG_LINES"])))
    path = d / "config.toml"
    write_config(cfg, path)
    cycle = Cycle(cfg, restart_every=int(os.environ.get("SOAK_RESTART_EVERY", "50")))
    asyncio.run(cycle.start())
    pane = Pane(f"{shlex.quote(sys.executable)} -m app --config {shlex.quote(str(path))}",
                {"XDG_STATE_HOME": os.environ["XDG_STATE_HOME"]})  # fmt: skip
    loop = asyncio.new_event_loop()
    driver = loop.create_task(cycle.run())
    threading.Thread(target=lambda: loop.run_until_complete(asyncio.wait([driver])), daemon=True).start()
    try:
        samples = sample(pane, minutes, every, settle=20)
        print("\n".join(pane.screen().splitlines()[:6]))
    finally:
        loop.call_soon_threadsafe(driver.cancel)
        pane.stop(quit_first=False)
        asyncio.run(cycle.stop())
    report(f"plain dashboard, router cycle every {cycle.period:.0f} s ({cycle.steps} steps, "
           f"{len(cycle.failures)} failed; restart every {cycle.restart_every or 'never'}, "
           f"scrollback {cfg.ui.log_lines:,} lines)", samples)  # fmt: skip
    # Whether the scrollback filled: until it is full, its growth is bounded growth, not a leak.
    print(f"  router log lines written: {sum(log_lines(f) for f in (d / 'state').rglob('*.log')):,}")
    for f in cycle.failures[:5]:
        print("   ", f)


def demo(minutes: float, every: float) -> None:
    d = workdir()
    env = {"XDG_STATE_HOME": str(d / "state")}
    pane = Pane(f"{shlex.quote(sys.executable)} -m app demo --traffic --dir {shlex.quote(str(d / 'demo'))}", env)
    try:
        samples = sample(pane, minutes, every, settle=40)
        print("\n".join(pane.screen().splitlines()[:6]))
    finally:
        pane.stop(quit_first=True)
        stop_leftovers(str(d))
    report("llamaherd demo --traffic", samples)


if __name__ == "__main__":
    a = sys.argv[1:]
    which = a[0] if a else "plain"
    mins = float(a[1]) if len(a) > 1 else 20.0
    every_s = float(a[2]) if len(a) > 2 else 30.0
    (plain if which == "plain" else demo)(mins, every_s)
