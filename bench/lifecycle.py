"""Router lifecycle figures: start-to-healthy (local and over ssh), kill -9 to the follower reporting it, and
what one round of host stats costs per machine (local psutil; remote: one command reading /proc).

Run: python -m bench.lifecycle [N]
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import psutil

from app.config import MachineConfig
from app.services.core.router_types import RouterState
from app.services.lifecycle.llama_server_binary import find_llama_server
from app.services.machine.machine import Machine
from bench.common import figures, tiny_models, workdir
from tests.helpers.router import preset_text
from tests.helpers.sshd import SshdUnavailable, start_sshd


def exited(m: Machine) -> bool:
    # A function, not the loop's own test: a narrowed attribute read in a loop looks constant to mypy.
    return m.view.router_state is RouterState.EXITED


async def start_stop(cfg: MachineConfig, n: int) -> tuple[list[float], list[float], list[float]]:
    starts: list[float] = []
    kills: list[float] = []
    stats: list[float] = []
    for _ in range(n):
        m = Machine(cfg, lambda ev: None)
        assert m.manager is not None
        await m.transport.connect()
        t0 = time.perf_counter()
        rec, _ = await m.manager.start()
        starts.append((time.perf_counter() - t0) * 1000)
        m.start()
        while m.view.router_state is not RouterState.RUNNING or m.view.stream != "sse":
            await asyncio.sleep(0.01)
        for _ in range(5):
            t1 = time.perf_counter()
            await m.transport.host_stats()
            stats.append((time.perf_counter() - t1) * 1000)
        t0 = time.perf_counter()
        psutil.Process(rec.pid).kill()
        while not exited(m):
            await asyncio.sleep(0.005)
        kills.append((time.perf_counter() - t0) * 1000)
        await m.close()
    return starts, kills, stats


async def main(n: int) -> None:
    binary = find_llama_server()
    if binary is None:
        raise SystemExit("llama-server not found")
    d = workdir()
    preset = d / "models.ini"
    preset.write_text(preset_text(dict(tiny_models(d))))
    os.environ["XDG_STATE_HOME"] = str(d / "state")
    local = MachineConfig(name="local", router="bench-local", program=binary, preset=str(preset))
    s, k, st = await start_stop(local, n)
    print(figures("local start -> healthy", s))
    print(figures("local kill -9 -> follower shows 'exited'", k))
    print(figures("local host stats, one round", st))
    try:
        server = start_sshd(Path(d / "sshd"))
    except SshdUnavailable as e:
        print(f"ssh figures skipped: {e}")
        return
    try:
        remote = MachineConfig(
            name="far", host=server.host, port=server.port, user=server.user, identity_file=server.client_key,
            known_hosts=server.known_hosts, router="bench-ssh", program=binary, preset=str(preset),
        )  # fmt: skip
        s, k, st = await start_stop(remote, n)
        print(figures("ssh start -> healthy (incl. connect)", s))
        print(figures("ssh kill -9 -> follower shows 'exited'", k))
        print(figures("ssh host stats, one round (one remote command)", st))
    finally:
        server.stop()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5))
