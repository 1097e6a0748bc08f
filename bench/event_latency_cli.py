"""Router status change -> `llamaherd events` prints it.

A raw SSE reader in this process stamps each event as it leaves the router's socket; `llamaherd events` runs as a
real subprocess on the same router and this process stamps each line it prints. The difference is what llamaherd
adds (parsing, its own connection, printing). Loads alternate between two models with --models-max 1, so each load
also evicts the other model: about five status changes per load.

Run: python -m bench.event_latency_cli [N_LOADS]
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

import httpx

from bench.common import figures, start_router, tiny_models, workdir


def key(model: str, event: str, status: str | None, n: int) -> tuple[str, str, str | None, int]:
    return (model, event, status, n)


async def main(n_loads: int) -> None:
    d = workdir()
    router = start_router(d, dict(tiny_models(d)))
    cfg = d / "config.toml"
    cfg.write_text(f'[[machines]]\nname = "bench"\nurl = "{router.url}"\n')
    raw_t: dict[tuple[str, str, str | None, int], float] = {}
    cli_t: dict[tuple[str, str, str | None, int], float] = {}
    counts_raw: dict[tuple[str, str, str | None], int] = {}
    counts_cli: dict[tuple[str, str, str | None], int] = {}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "app", "--config", str(cfg), "events", "bench", stdout=asyncio.subprocess.PIPE
    )
    try:
        assert proc.stdout is not None

        async def read_cli() -> None:
            assert proc.stdout is not None
            while line := await proc.stdout.readline():
                now = time.perf_counter()
                ev = json.loads(line)
                if ev["event"] in ("model_status", "status_change"):
                    k0 = (ev["model"], ev["event"], ev.get("status"))
                    counts_cli[k0] = counts_cli.get(k0, 0) + 1
                    cli_t[(*k0, counts_cli[k0])] = now

        async def read_raw() -> None:
            async with httpx.AsyncClient(timeout=None) as c, c.stream("GET", router.url + "/models/sse") as r:
                async for line in r.aiter_lines():
                    if line.startswith("data: "):
                        now = time.perf_counter()
                        ev = json.loads(line[6:])
                        k0 = (ev["model"], ev["event"], (ev.get("data") or {}).get("status"))
                        counts_raw[k0] = counts_raw.get(k0, 0) + 1
                        raw_t[(*k0, counts_raw[k0])] = now

        tasks = [asyncio.create_task(read_cli()), asyncio.create_task(read_raw())]
        await asyncio.sleep(2.0)  # both connected
        async with httpx.AsyncClient(base_url=router.url, timeout=30) as c:
            for i in range(n_loads):
                model = "alpha" if i % 2 == 0 else "beta"
                await c.post("/models/load", json={"model": model})
                for _ in range(300):
                    st = {m["id"]: m["status"]["value"] for m in (await c.get("/models")).json()["data"]}
                    if st[model] == "loaded":
                        break
                    await asyncio.sleep(0.02)
        await asyncio.sleep(1.0)
        for t in tasks:
            t.cancel()
    finally:
        proc.terminate()
        await proc.wait()
        router.stop()
    samples = [(cli_t[k] - raw_t[k]) * 1000 for k in raw_t if k in cli_t]
    missing = len([k for k in raw_t if k not in cli_t])
    print(
        f"status changes seen by the raw reader: {len(raw_t)}; printed by llamaherd events: {len(cli_t)}; "
        f"missing: {missing}"
    )
    print(figures("router event -> `llamaherd events` line (beyond a raw SSE reader)", samples))


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 20))
