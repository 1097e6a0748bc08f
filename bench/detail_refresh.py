"""Cost of the model detail pane's refresh (and the fleet view's memory column): one probe of a router's children
(hosts/child_memory.py, one `sh` walking /proc on this machine), made every REFRESH_EVERY seconds while the pane is
open. A real router with two loaded tiny models; prints the probe's wall time and the CPU it costs (this process
and the shell it starts), and that CPU as a share of one core at the pane's refresh rate.

Run: python -m bench.detail_refresh [--rounds 50]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time

import httpx
import psutil

from app.services.hosts.child_memory import memory_of
from app.services.hosts.local import LocalTransport
from app.services.machine.model_memory import probe_children
from app.ui.screens.model_detail import REFRESH_EVERY
from bench.common import figures, start_router, tiny_models, workdir


def own_cpu() -> float:
    """CPU seconds of this process and the children it waited for (the probe's shells)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


async def main(rounds: int) -> None:
    d = workdir()
    models = tiny_models(d)
    router = start_router(d, {"alpha": models["alpha"], "beta": models["beta"]}, models_max=2)
    try:
        async with httpx.AsyncClient(base_url=router.url, timeout=60) as http:
            for name in ("alpha", "beta"):
                (await http.post("/models/load", json={"model": name})).raise_for_status()
            while True:
                listed = (await http.get("/models")).json()["data"]
                if all(m["status"]["value"] == "loaded" for m in listed if m["id"] in ("alpha", "beta")):
                    break
                await asyncio.sleep(0.2)
        transport = LocalTransport()
        processes = len(psutil.pids())
        walls: list[float] = []
        cpu0 = own_cpu()
        for _ in range(rounds):
            t0 = time.perf_counter()
            probe = await probe_children(transport, router.pid)
            mems = memory_of(probe, [("alpha", None), ("beta", None)])
            walls.append((time.perf_counter() - t0) * 1000)
            assert all(m.rss for m in mems.values()), mems
        cpu = (own_cpu() - cpu0) / rounds
        print(f"router children probe, {processes} processes on this host, 2 loaded models")
        print(figures("probe wall time", walls))
        print(f"probe CPU: {cpu * 1000:.1f} ms per probe (this process and its shell)")
        print(f"pane open, refreshed every {REFRESH_EVERY:.0f} s: {100 * cpu / REFRESH_EVERY:.2f} % of one core")
    finally:
        router.stop()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=50)
    asyncio.run(main(ap.parse_args().rounds))
