"""Shared by the benchmarks: tiny models and real routers in a temporary directory, a far machine (a real sshd
behind the delay proxy), and figure printing."""

from __future__ import annotations

import argparse
import asyncio
import atexit
import contextlib
import json
import os
import shutil
import statistics
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path

import psutil

from app.config import Config
from app.services.fleet import Fleet
from app.services.lifecycle.llama_server_binary import HOW_TO_GET, find_llama_server
from app.tinymodels import TinySpec, write_corrupt_model, write_tiny_model
from tests.helpers.delay_proxy import DelayProxy
from tests.helpers.herd import Herd
from tests.helpers.router import RouterProc, preset_text
from tests.helpers.sshd import SshdUnavailable, SshServer, start_sshd


def workdir() -> Path:
    """A temporary directory of this bench run, removed when the run ends (its routers are stopped by then)."""
    d = Path(tempfile.mkdtemp(prefix="llamaherd-bench-"))
    atexit.register(shutil.rmtree, d, ignore_errors=True)
    return d


def tiny_models(d: Path) -> dict[str, Path]:
    return {
        "alpha": write_tiny_model(d / "alpha.gguf", TinySpec(name="alpha", seed=1)),
        "beta": write_tiny_model(d / "beta.gguf", TinySpec(name="beta", seed=2)),
        "broken": write_corrupt_model(d / "broken.gguf"),
    }


def start_router(
    d: Path, models: dict[str, Path | str], name: str = "r", models_max: int = 1, healthy_within: float = 30.0
) -> RouterProc:
    """`healthy_within`: a preset of 20,000 sections takes the router itself about 90 s to read on 2 cores."""
    binary = find_llama_server()
    if binary is None:
        raise SystemExit(HOW_TO_GET)
    preset = d / f"{name}.ini"
    preset.write_text(preset_text(models))
    router = RouterProc(binary=binary, preset=preset, log=d / f"{name}.log", models_max=models_max).start(wait=False)
    try:
        router.wait_healthy(timeout=healthy_within)
    except BaseException:
        router.stop()
        raise
    return router


def figures(label: str, samples_ms: list[float]) -> str:
    s = sorted(samples_ms)
    p95 = s[min(len(s) - 1, round(0.95 * (len(s) - 1)))]
    return (
        f"{label}: n={len(s)} median={statistics.median(s):.1f} ms p95={p95:.1f} ms "
        f"min={s[0]:.1f} ms max={s[-1]:.1f} ms"
    )


def rtt_parser() -> argparse.ArgumentParser:
    """The slow-link benches' parser with their common --rtt; each adds its own options after it."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--rtt", type=float, default=300.0, help="round trip in ms (default 300)")
    return ap


def config_for(server: SshServer, proxy_port: int, d: Path, program: str) -> str:
    known = d / "known_hosts_proxy"  # the server's key under the proxy's port
    key = server.host_key_line.split(" ", 1)[1]
    known.write_text(f"[{server.host}]:{proxy_port} {key}\n")
    os.chmod(known, 0o600)
    vals = {
        "name": "far", "host": server.host, "port": proxy_port, "user": server.user,
        "identity_file": server.client_key, "known_hosts": str(known), "router": "bench-rtt",
        "program": program, "preset": str(d / "remote models.ini"),
    }  # fmt: skip
    return "[[machines]]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in vals.items())


@dataclass
class FarSide:
    """A machine "far" for the slow-link benches: a real sshd on 127.0.0.1 and the tiny models' preset in a work
    directory, a Herd whose config reaches it through a DelayProxy, and the remote-trace file."""

    d: Path
    program: str
    server: SshServer
    herd: Herd
    trace: Path

    @contextmanager
    def through_proxy(self, rtt_ms: float) -> Iterator[DelayProxy]:
        """The delay proxy at this round trip with the config naming it; on leaving, every router the Herd
        started is stopped and so is the sshd."""
        try:
            with DelayProxy(self.server.host, self.server.port, one_way=rtt_ms / 2000) as proxy:
                self.herd.write_config(config_for(self.server, proxy.port, self.d, self.program))
                yield proxy
        finally:
            self.herd.stop_all()
            self.server.cut_connections()
            self.server.stop()


def far_side() -> FarSide | None:
    """None (having said why) where sshd cannot be started here."""
    program = find_llama_server()
    if program is None:
        raise SystemExit(HOW_TO_GET)
    d = workdir()
    models = tiny_models(d)
    (d / "remote models.ini").write_text(preset_text(dict(models)))
    try:
        server = start_sshd(d / "sshd")
    except SshdUnavailable as e:
        print(f"skipped: {e}")
        return None
    return FarSide(d=d, program=program, server=server, herd=Herd(root=d, config=d / "config.toml"),
                   trace=d / "trace.log")  # fmt: skip


def cpu_seconds(p: psutil.Process) -> float:
    """CPU seconds of a process and all its children (user and system)."""
    t = p.cpu_times()
    total = float(t.user + t.system)
    for c in p.children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess):
            ct = c.cpu_times()
            total += ct.user + ct.system
    return total


@asynccontextmanager
async def drained_fleet(config: Config) -> AsyncIterator[Fleet]:
    """A started Fleet (what the dashboard holds) with no UI, its events read and dropped as a dashboard would read
    them; closed on the way out."""
    fleet = Fleet(config)
    events = fleet.subscribe()

    async def drain() -> None:
        while True:
            await events.get()

    drainer = asyncio.create_task(drain())
    await fleet.start()
    try:
        yield fleet
    finally:
        drainer.cancel()
        await fleet.close()


def load_text() -> str:
    """This machine's load average, for a figure's conditions."""
    one, five, _ = os.getloadavg()
    return f"load {one:.2f} (5 min {five:.2f})"
