"""`llamaherd serve`'s browser sessions: what each costs (issue 37, item 4), in both modes.

shared (the default): every tab is a dashboard inside the serve process, over its one Fleet (app/web/shared.py);
process: every tab runs `llamaherd dashboard` in a process of its own (app/web/sessions.py). Measured on a fleet
of two machines, "here" (a real local router with a model loaded) and "far" (this machine through a real sshd,
llamaherd managing a router there): with 0, 1, 2 and 3 tabs open (websockets speaking textual-serve's protocol, as
a browser tab does; each drawn for a few seconds before measuring), the memory of the serve process and of each
session process (RSS, and PSS, which splits the pages shared between processes), and the ssh connections to the
far machine from the serve process and its sessions; then, shared, 16 tabs opened and closed one after another.

Run: python -m bench.serve_sessions
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import httpx
import psutil

from bench.common import cpu_seconds, start_router, tiny_models, workdir
from tests.helpers.herd import Herd
from tests.helpers.router import preset_text
from tests.helpers.sshd import SshdUnavailable, SshServer, start_sshd

TOKEN = "bench-token-" + "y" * 24
ROOT = Path(__file__).resolve().parents[1]
SETTLE = 8.0
CPU_WINDOW = 15.0
CHURN = 16


def config(server: SshServer, d: Path, local_url: str, program: str) -> str:
    far = {
        "name": "far", "host": server.host, "port": server.port, "user": server.user,
        "identity_file": server.client_key, "known_hosts": server.known_hosts, "router": "bench-serve",
        "program": program, "preset": str(d / "far.ini"),
    }  # fmt: skip
    return (f'[[machines]]\nname = "here"\nurl = "{local_url}"\n\n[[machines]]\n'
            + "".join(f"{k} = {json.dumps(v)}\n" for k, v in far.items()))  # fmt: skip


def ssh_links(root: psutil.Process, port: int) -> int:
    n = 0
    for p in [root, *root.children(recursive=True)]:
        with contextlib.suppress(psutil.NoSuchProcess):
            n += sum(
                1 for c in p.net_connections("tcp") if c.raddr and c.raddr.port == port and c.status == "ESTABLISHED"
            )
    return n


async def read_all(ws: aiohttp.ClientWebSocketResponse) -> None:
    """Read what a dashboard draws, as a browser would, until its websocket closes."""
    async for _ in ws:
        pass


def mib(n: float) -> str:
    return f"{n / 2**20:.1f}"


async def measure(mode: str, base: str, root: psutil.Process, sshd_port: int) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    tabs = []
    readers: list[asyncio.Task[None]] = []
    async with aiohttp.ClientSession(headers=auth) as http:
        print(f"[{mode}] 0 tabs: ssh connections to far: {ssh_links(root, sshd_port)}, "
              f"serve RSS {mib(root.memory_info().rss)} MiB")  # fmt: skip
        for n in (1, 2, 3):
            ws = await http.ws_connect(base + "/ws?width=160&height=48")
            tabs.append(ws)
            await asyncio.wait_for(ws.receive(), 60)  # the first frame of the dashboard
            readers.append(asyncio.create_task(read_all(ws)))
            await asyncio.sleep(SETTLE)
            c0, t0 = cpu_seconds(root), time.monotonic()
            await asyncio.sleep(CPU_WINDOW)
            cpu = 100 * (cpu_seconds(root) - c0) / (time.monotonic() - t0)
            mems = [k.memory_full_info() for k in root.children()]
            each = (
                f"; each session process RSS {', '.join(mib(m.rss) for m in mems)} MiB, "
                f"PSS {', '.join(mib(m.pss) for m in mems)} MiB"
                if mems
                else ""
            )
            print(f"[{mode}] {n} tab(s): ssh connections to far: {ssh_links(root, sshd_port)}; serve RSS "
                  f"{mib(root.memory_info().rss)} MiB{each}; CPU (serve and sessions) {cpu:.1f} % of a core over "
                  f"{CPU_WINDOW:g} s")  # fmt: skip
        for t in tabs:
            await t.close()
        await asyncio.gather(*readers, return_exceptions=True)


async def churn(base: str, root: psutil.Process, times: int = CHURN) -> None:
    """Tabs opened and closed one after another: what a long-running serve keeps of them."""
    rss = []
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        for _ in range(times):
            ws = await http.ws_connect(base + "/ws?width=160&height=48")
            await asyncio.wait_for(ws.receive(), 60)
            reader = asyncio.create_task(read_all(ws))
            await asyncio.sleep(2)
            await ws.close()
            await reader
            await asyncio.sleep(1)
            rss.append(root.memory_info().rss)
    print(f"{times} tabs opened and closed one after another: serve RSS after each (MiB) "
          f"{' '.join(mib(r) for r in rss)}")  # fmt: skip


def stop(proc: subprocess.Popen[str]) -> None:
    """SIGTERM, then SIGKILL by pid for the server and whatever session processes are left."""
    kids = psutil.Process(proc.pid).children(recursive=True)
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    for k in kids:
        with contextlib.suppress(psutil.NoSuchProcess):
            k.kill()


def main() -> None:
    d = workdir()
    models = tiny_models(d)
    router = start_router(d, dict(models))
    program = router.binary
    (d / "far.ini").write_text(preset_text(dict(models)))
    try:
        server = start_sshd(d / "sshd")
    except SshdUnavailable as e:
        router.stop()
        print(f"skipped: {e}")
        return
    herd = Herd(root=d, config=d / "config.toml", extra_env={"LLAMAHERD_SERVE_TOKEN": TOKEN})
    try:
        herd.write_config(config(server, d, router.url, program))
        httpx.post(router.url + "/models/load", json={"model": "alpha"}, timeout=30)
        router.wait_model("alpha", {"loaded"})
        assert herd.run("start", "far", timeout=120).returncode == 0
        for mode in ("shared", "process"):
            argv = [
                sys.executable,
                "-m",
                "app",
                "--config",
                str(herd.config),
                "serve",
                "--port",
                "0",
                "--sessions",
                mode,
            ]
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=herd.env,
                                    cwd=ROOT)  # fmt: skip
            try:
                assert proc.stdout is not None
                line = proc.stdout.readline()
                if "dashboard at" not in line:
                    raise SystemExit(f"serve did not start: {line}{proc.stderr.read() if proc.stderr else ''}")
                base = line.split("dashboard at ", 1)[1].split("/ ", 1)[0]
                time.sleep(SETTLE)
                asyncio.run(measure(mode, base, psutil.Process(proc.pid), server.port))
                if mode == "shared":
                    asyncio.run(churn(base, psutil.Process(proc.pid)))
            finally:
                stop(proc)
    finally:
        herd.run("stop", "far", timeout=60)
        herd.stop_all()
        server.stop()
        router.stop()


if __name__ == "__main__":
    main()
