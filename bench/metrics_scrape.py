"""`llamaherd serve`'s /metrics: scrape time at 50 machines × 20 models, and the idle CPU of `serve --metrics-only`.

Scrape: a real Fleet of 50 machines (attach-only, never started: nothing is ever asked of a router) whose state is
filled as its followers would fill it (each machine's view and 20 models, 4 of them loaded, host stats with two
GPUs, activity figures), rendered by FleetMetrics (1) in-process, generate_latest alone, and (2) through the real
server (aiohttp, the token middleware) over loopback HTTP with the bearer token. Target: ≤ 50 ms a scrape.

Idle: the real `python -m app serve --metrics-only` on one local machine whose real router has a model loaded,
nobody scraping, its CPU (process and children) over SECONDS after a settle; then the same with a scrape every
15 s (Prometheus' default interval). Target: ≤ 1 % of a core.

Run: python -m bench.metrics_scrape [SECONDS]     (default 60)
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import psutil
from prometheus_client import generate_latest

from app.config import Config, MachineConfig
from app.services.activity.metrics import ModelActivity
from app.services.activity.poll import ActivityChanged
from app.services.core.fleet_events import HostStatsChanged, MachineView
from app.services.core.host_types import Connection, GpuStats, HostStats
from app.services.core.router_types import ModelInfo, ModelState, RouterState
from app.services.fleet import Fleet
from app.services.metrics.collector import FleetMetrics
from app.web.server import ServeOptions, start_server
from bench.common import cpu_seconds, figures, start_router, tiny_models, workdir
from tests.helpers.herd import Herd

MACHINES, MODELS, LOADED = 50, 20, 4
TOKEN = "bench-token-" + "x" * 24
ROOT = Path(__file__).resolve().parents[1]


def big_fleet() -> tuple[Fleet, FleetMetrics]:
    cfg = Config(
        machines=tuple(MachineConfig(name=f"box-{i:02d}", url=f"http://127.0.0.1:9/{i}") for i in range(MACHINES))
    )
    fleet = Fleet(cfg)  # never started: no follower runs, no request is made
    metrics = FleetMetrics(fleet)
    states = [ModelState.UNLOADED, ModelState.SLEEPING, ModelState.FAILED, ModelState.LOADING]
    for name in fleet.names:
        m = fleet.machine(name)
        m.view = MachineView(name=name, host="gpu", connection=Connection.CONNECTED, router_state=RouterState.ATTACHED)
        m.models = {
            f"model-{j:02d}-q4_k_m": ModelInfo(
                id=f"model-{j:02d}-q4_k_m", state=ModelState.LOADED if j < LOADED else states[j % len(states)]
            )
            for j in range(MODELS)
        }
        gpus = (GpuStats("RTX 4090", 12_000.0, 24_564.0, 40.0), GpuStats("RTX 4090", 8_000.0, 24_564.0, 10.0))
        metrics.absorb(HostStatsChanged(name, HostStats(30.0, 40 << 30, 128 << 30, (1.0, 1.0, 1.0), gpus)))
        acts = tuple(
            ModelActivity(name, f"model-{j:02d}-q4_k_m", True, tokens_per_s=40.0 + j, requests_processing=j % 2)
            for j in range(LOADED)
        )
        metrics.absorb(ActivityChanged(name, acts))
    return fleet, metrics


def touch_every_machine(metrics: FleetMetrics) -> None:
    """Every machine sends new host stats (on a live fleet, every 2 s each: so between two scrapes, the usual case)."""
    for name in list(metrics.host):
        metrics.absorb(HostStatsChanged(name, metrics.host[name]))


def cold(metrics: FleetMetrics) -> bytes:
    touch_every_machine(metrics)
    return metrics.render()


def scrape_times() -> None:
    _, metrics = big_fleet()
    registry = metrics.registry()
    body = generate_latest(registry)
    samples = sum(1 for line in body.splitlines() if line and not line.startswith(b"#"))
    print(f"{MACHINES} machines × {MODELS} models: {samples} samples, {len(body) / 1024:.0f} KiB of text")
    assert metrics.render() == body  # the same text as prometheus_client writes

    def reference() -> bytes:
        return bytes(generate_latest(registry))

    def changed() -> bytes:
        return cold(metrics)

    renders: list[tuple[str, Callable[[], bytes]]] = [
        ("prometheus_client's generate_latest", reference),
        ("render(), every machine changed since the last scrape", changed),
        ("render(), nothing changed", metrics.render),
    ]
    for label, render in renders:
        ms = []
        for _ in range(50):
            t0 = time.perf_counter()
            render()
            ms.append((time.perf_counter() - t0) * 1000)
        print(figures(f"in-process: {label}", ms))

    loop = asyncio.new_event_loop()
    ready = threading.Event()
    box: dict[str, object] = {}

    def serve() -> None:
        asyncio.set_event_loop(loop)
        opts = ServeOptions(port=0, metrics_only=True)
        running = loop.run_until_complete(start_server(opts, TOKEN, metrics))
        box["running"], box["port"] = running, running.addresses[0][1]
        ready.set()
        loop.run_forever()
        loop.run_until_complete(running.close())

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    ready.wait(10)
    url = f"http://127.0.0.1:{box['port']}/metrics"
    ms = []
    with httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        http.get(url).raise_for_status()
        for _ in range(100):
            loop.call_soon_threadsafe(touch_every_machine, metrics)
            t0 = time.perf_counter()
            r = http.get(url)
            ms.append((time.perf_counter() - t0) * 1000)
            assert r.status_code == 200 and len(r.content) == len(body)
    print(figures("scrape over loopback HTTP with the token, every machine changed (client's view)", ms))
    print("router requests made by these scrapes: 0 (the fleet is never started; the figures are its held state)")
    loop.call_soon_threadsafe(loop.stop)
    t.join(10)


def idle_cpu(seconds: float) -> None:
    d = workdir()
    router = start_router(d, dict(tiny_models(d)))
    try:
        herd = Herd(root=d, config=d / "config.toml")
        herd.write_config(f'[[machines]]\nname = "here"\nurl = "{router.url}"\n')
        httpx.post(router.url + "/models/load", json={"model": "alpha"}, timeout=30)
        router.wait_model("alpha", {"loaded"})
        env = {**herd.env, "LLAMAHERD_SERVE_TOKEN": TOKEN}
        argv = [sys.executable, "-m", "app", "--config", str(herd.config), "serve", "--metrics-only", "--port", "0"]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            if "metrics at" not in line:
                raise SystemExit(f"serve did not start: {line}{proc.stderr.read() if proc.stderr else ''}")
            url = line.split("metrics at ", 1)[1].split(" ", 1)[0]
            time.sleep(10)  # settle: imports, the first reads
            p = psutil.Process(proc.pid)
            c0, t0 = cpu_seconds(p), time.monotonic()
            time.sleep(seconds)
            c1, t1 = cpu_seconds(p), time.monotonic()
            print(
                f"serve --metrics-only, idle, 1 machine, 1 model loaded: {100 * (c1 - c0) / (t1 - t0):.2f} % of a core "
                f"over {t1 - t0:.0f} s; RSS {p.memory_info().rss / 2**20:.1f} MiB"
            )
            c0, t0 = cpu_seconds(p), time.monotonic()
            with httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"}) as http:
                while time.monotonic() - t0 < seconds:
                    http.get(url).raise_for_status()
                    time.sleep(15)
            c1, t1 = cpu_seconds(p), time.monotonic()
            print(
                f"serve --metrics-only, scraped every 15 s: {100 * (c1 - c0) / (t1 - t0):.2f} % of a core "
                f"over {t1 - t0:.0f} s"
            )
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
    finally:
        router.stop()


if __name__ == "__main__":
    scrape_times()
    idle_cpu(float(sys.argv[1]) if len(sys.argv) > 1 else 60.0)
