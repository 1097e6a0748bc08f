"""What a pull costs llamaherd's side, and how late its progress is: a SIZE download (default 1 GB) from the hub
stand-in serving at RATE (default 50 MB/s, in a process of its own) through a real router's download child, followed
by the Fleet the dashboard holds (its own event stream, the pull's outcome). Prints the CPU of this process during
the download as a percentage of one core (an idle window of the same Fleet first, for comparison), the router's
`download_progress` events per second, and the time from each event's arrival on a raw socket of its own to the
Fleet event that carries it. Then the same download again, asked of the real dashboard (`python -m app` in tmux)
with `:pull`: the dashboard's CPU while its downloading row moves, until the model is listed.

Run: python -m bench.pull_cost [--size-mb 1000] [--rate-mb 50]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil

from app.config import Config, MachineConfig
from app.services.core.fleet_events import ModelEvent
from app.services.core.router_types import DownloadProgressEvent, RouterState
from app.services.fleet import Fleet
from app.services.lifecycle.llama_server_binary import HOW_TO_GET, find_llama_server
from app.tinymodels import TinySpec, write_tiny_model
from bench.common import cpu_seconds, workdir
from bench.ui_idle_cpu import ROOT, SETTLE
from tests.helpers.router import RouterProc

REPO = "bench/Big-GGUF"
NAME = f"{REPO}:Q4_K_M"


def big_repo(root: Path, size: int) -> Path:
    """A tiny model's header and weights, then zeros up to `size` (sparse: nothing is written for them)."""
    path = write_tiny_model(root / REPO / "big-Q4_K_M.gguf", TinySpec("big"))
    with open(path, "r+b") as f:
        f.truncate(size)
    return path


class RawEvents(threading.Thread):
    """The router's SSE read on a plain socket: (arrival time, done) of each download_progress of NAME."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.port = port
        self.seen: dict[int, float] = {}
        self.cpu = 0.0
        self.ready = threading.Event()

    def run(self) -> None:
        s = socket.create_connection(("127.0.0.1", self.port))
        s.sendall(b"GET /models/sse HTTP/1.1\r\nHost: x\r\n\r\n")
        self.ready.set()
        buf = b""
        while True:
            data = s.recv(1 << 16)
            now = time.monotonic()
            if not data:
                break
            buf += data
            *lines, buf = buf.split(b"\n")
            for line in lines:
                if line.startswith(b"data: ") and b"download_progress" in line:
                    ev = json.loads(line[6:])
                    done = sum(v["done"] for v in ev["data"]["progress"].values())
                    self.seen.setdefault(done, now)
            self.cpu = time.thread_time()


async def idle_cpu(seconds: float) -> float:
    t0, c0 = time.monotonic(), time.process_time()
    await asyncio.sleep(seconds)
    return (time.process_time() - c0) / (time.monotonic() - t0) * 100


async def follow_pull(router: RouterProc, size: int, rate: float) -> None:
    fleet = Fleet(Config(machines=(MachineConfig(name="here", url=router.url),)))
    try:
        await fleet.start()
        while fleet.view("here").router_state is not RouterState.ATTACHED:
            await asyncio.sleep(0.05)
        idle = await idle_cpu(3.0)
        raw = RawEvents(router.port)
        raw.start()
        raw.ready.wait(5)
        await asyncio.sleep(0.3)
        q = fleet.subscribe()
        fleet_seen: dict[int, float] = {}

        async def collect() -> None:
            while True:
                ev = await q.get()
                if isinstance(ev, ModelEvent) and isinstance(ev.event, DownloadProgressEvent):
                    fleet_seen.setdefault(ev.event.done, time.monotonic())

        collector = asyncio.create_task(collect())
        t0, c0 = time.monotonic(), time.process_time()
        outcome = await fleet.pull("here", NAME)
        wall, cpu = time.monotonic() - t0, time.process_time() - c0
        collector.cancel()
        raw_cpu = raw.cpu
        delays = sorted((fleet_seen[k] - raw.seen[k]) * 1000 for k in fleet_seen if k in raw.seen)
    finally:
        await fleet.close()
    mb = size / 1e6
    print(f"pull of {mb:.0f} MB at {rate / 1e6:.0f} MB/s: {outcome.cause}" + ("" if outcome.ok else " (FAILED)"))
    print(f"  wall {wall:.1f} s ({mb / wall:.1f} MB/s); router download_progress events: {len(raw.seen)} "
          f"({len(raw.seen) / wall:.0f}/s)")  # fmt: skip
    own = (cpu - raw_cpu) / wall * 100
    print(f"  CPU of this process (Fleet + pull, the raw reader's thread taken out): {own:.2f} % of a core "
          f"(idle Fleet: {idle:.2f} %)")  # fmt: skip
    if delays:
        p95 = delays[min(len(delays) - 1, int(len(delays) * 0.95))]
        print(f"  router event -> Fleet event: median {statistics.median(delays):.1f} ms, p95 {p95:.1f} ms, "
              f"max {delays[-1]:.1f} ms over {len(delays)} events")  # fmt: skip


def pane(sock: str) -> str:
    """What the dashboard's tmux pane shows now."""
    return subprocess.run(["tmux", "-L", sock, "capture-pane", "-p", "-t", "b"], capture_output=True, text=True).stdout


def dashboard_cpu(router: RouterProc, d: Path, timeout: float = 600.0) -> None:
    """The real dashboard (`python -m app` in a tmux pane, attached to the router) pulling NAME itself: its CPU
    (with its children) idle, then from the `:pull` until the model is listed."""
    cfg = d / "dash.toml"
    cfg.write_text(f'[[machines]]\nname = "here"\nurl = "{router.url}"\n')
    sock = f"llamaherd-pull-{os.getpid()}"
    cmd = f"cd {shlex.quote(str(ROOT))} && exec env TERM=screen-256color {shlex.quote(sys.executable)} -m app " \
          f"--config {shlex.quote(str(cfg))}"  # fmt: skip
    subprocess.run(["tmux", "-L", sock, "-f", "/dev/null", "new-session", "-d", "-x", "160", "-y", "50", "-s", "b",
                    cmd], check=True)  # fmt: skip
    pid = int(subprocess.run(["tmux", "-L", sock, "display-message", "-p", "-t", "b", "#{pane_pid}"],
                             capture_output=True, text=True).stdout.strip())  # fmt: skip
    try:
        app = psutil.Process(pid)
        time.sleep(SETTLE)
        c0, w0 = cpu_seconds(app), time.monotonic()
        time.sleep(10.0)
        idle = (cpu_seconds(app) - c0) / (time.monotonic() - w0) * 100
        # The dashboard's own pull, as an operator asks it (`:pull`): its follower and its outcome are measured too,
        # from the Enter that asks it (the typing before it is the command line's cost, not the download's).
        tmux = ["tmux", "-L", sock]
        subprocess.run([*tmux, "send-keys", "-t", "b", ":"], check=True)
        time.sleep(0.3)
        subprocess.run([*tmux, "send-keys", "-t", "b", "-l", f"pull {NAME}"], check=True)
        time.sleep(1.0)
        c0, w0 = cpu_seconds(app), time.monotonic()
        subprocess.run([*tmux, "send-keys", "-t", "b", "Enter"], check=True)
        shown = ""
        while time.monotonic() - w0 < timeout:
            ids = {m["id"]: m["status"]["value"] for m in httpx.get(router.url + "/models", timeout=10).json()["data"]}
            if NAME not in ids and time.monotonic() - w0 > 15:
                raise SystemExit(f"the dashboard's :pull did not reach the router within 15 s:\n{pane(sock)}")
            if ids.get(NAME) not in (None, "downloading", "downloaded"):
                break
            if not shown and ids.get(NAME) == "downloading" and time.monotonic() - w0 > 5:
                shown = next((ln.strip() for ln in pane(sock).splitlines() if "downloading" in ln), "")
            time.sleep(0.5)
        wall = time.monotonic() - w0
        busy = (cpu_seconds(app) - c0) / wall * 100
    finally:
        subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    print(f"dashboard (python -m app in tmux, attached) during the download ({wall:.1f} s): {busy:.2f} % of a core "
          f"(idle: {idle:.2f} %)")  # fmt: skip
    print(f"  its downloading row: {shown[:150]}")


@contextlib.contextmanager
def router_with_hub(d: Path, size: int, rate: float) -> Iterator[RouterProc]:
    """A real router whose download child fetches from the hub stand-in, serving a `size`-byte file at `rate` bytes
    a second from a process of its own (its CPU is not llamaherd's); both stopped on the way out."""
    big_repo(d / "hub", size)
    hub = subprocess.Popen([sys.executable, "-m", "tests.helpers.hub_standin", str(d / "hub"), str(rate)],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert hub.stdout is not None
        url = hub.stdout.readline().strip()
        binary = find_llama_server()
        if binary is None:
            raise SystemExit(HOW_TO_GET)
        (d / "p.ini").write_text("[*]\nctx-size = 256\n")
        env = {"MODEL_ENDPOINT": url, "LLAMA_CACHE": str(d / "cache")}
        router = RouterProc(binary=binary, preset=d / "p.ini", log=d / "r.log", env=env).start()
        try:
            yield router
        finally:
            router.stop()
    finally:
        assert hub.stdin is not None
        hub.stdin.close()
        hub.wait(10)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=float, default=1000.0)
    ap.add_argument("--rate-mb", type=float, default=50.0)
    a = ap.parse_args()
    size, rate = int(a.size_mb * 1e6), a.rate_mb * 1e6
    d = workdir()
    with router_with_hub(d, size, rate) as router:
        asyncio.run(follow_pull(router, size, rate))
        httpx.delete(router.url + "/models", params={"model": NAME}, timeout=60).raise_for_status()
        if shutil.which("tmux"):
            dashboard_cpu(router, d)


if __name__ == "__main__":
    main()
