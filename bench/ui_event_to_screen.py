"""Router status change -> the model table's cell shows it, through the real Fleet, in the real (headless) app.

A raw SSE reader in this process stamps each status change as it leaves the router's socket; the dashboard runs in
the same process (App.run_test, headless) with the real Fleet on the same router, and a status cell is stamped
after the refresh that paints it. Loads alternate between two models with --models-max 1, so each load is a few
changes (loading, loaded, the other one unloaded). Target: p95 <= 100 ms.

Run: python -m bench.ui_event_to_screen [N_LOADS]
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

import httpx

from app.config import Config, MachineConfig
from app.services.fleet import Fleet
from app.ui.app import make_app
from bench.common import figures, start_router, tiny_models, workdir

WORDS = ("unloaded", "loading", "loaded", "sleeping", "failed", "downloading")

Change = tuple[str, str, float]  # model, state word, perf_counter


def word(status_text: str) -> str:
    return next((w for w in WORDS if f" {w}" in f" {status_text}"), "")


async def main(n_loads: int) -> None:
    d = workdir()
    router = start_router(d, {k: v for k, v in tiny_models(d).items() if k != "broken"})
    cfg = Config(machines=(MachineConfig(name="bench", url=router.url),))
    raw: list[Change] = []
    ui: list[Change] = []
    try:
        app = make_app(cfg, Fleet(cfg))
        async with app.run_test(size=(120, 40)) as pilot:
            table = app.dashboard.model_table
            last_ui: dict[str, str] = {}
            apply_rows = table.apply_rows

            def stamp_changes(desired: Any, only: Any = None) -> Any:
                diff = apply_rows(desired, only)
                for model, row in desired.items():
                    w = word(row[1].text)
                    if w and last_ui.get(model) != w:
                        last_ui[model] = w
                        table.call_after_refresh(lambda m=model, w=w: ui.append((m, w, time.perf_counter())))
                return diff

            table.apply_rows = stamp_changes  # type: ignore[method-assign]

            last_raw: dict[str, str] = {}

            async def read_raw() -> None:
                async with httpx.AsyncClient(timeout=None) as c, c.stream("GET", router.url + "/models/sse") as r:
                    async for line in r.aiter_lines():
                        if not line.startswith("data: "):
                            continue
                        now = time.perf_counter()
                        ev = json.loads(line[6:])
                        st = (ev.get("data") or {}).get("status")
                        if ev["event"] not in ("model_status", "status_change") or not st:
                            continue
                        w = "failed" if st == "unloaded" and (ev["data"].get("exit_code") or 0) != 0 else st
                        if last_raw.get(ev["model"]) != w:
                            last_raw[ev["model"]] = w
                            raw.append((ev["model"], w, now))

            # The table starts from the list: seed what it shows so the first change counts from there.
            while len(table.rows_now) < 2:
                await pilot.pause(0.05)
            for model, row in table.rows_now.items():
                last_ui[model] = last_raw[model] = word(row[1].text)
            reader = asyncio.create_task(read_raw())
            await asyncio.sleep(1.0)
            async with httpx.AsyncClient(base_url=router.url, timeout=30) as c:
                for i in range(n_loads):
                    model = "alpha" if i % 2 == 0 else "beta"
                    await c.post("/models/load", json={"model": model})
                    for _ in range(500):
                        st = {m["id"]: m["status"]["value"] for m in (await c.get("/models")).json()["data"]}
                        if st[model] == "loaded":
                            break
                        await asyncio.sleep(0.02)
                    await asyncio.sleep(0.15)  # let the table settle before the next burst
            await asyncio.sleep(1.0)
            reader.cancel()
    finally:
        router.stop()
    samples, missing = match(raw, ui)
    print(f"status changes on the wire: {len(raw)}; shown by the table: {len(samples)}; not shown: {len(missing)}")
    if missing:
        # A state that lasted less than the 50 ms coalescing window (a tiny model's "loading") is not painted.
        print(f"  not shown (replaced within the coalescing window): {missing[:6]}{' ...' if len(missing) > 6 else ''}")
    print(figures("router status change -> table cell painted", samples))


def match(raw: list[Change], ui: list[Change]) -> tuple[list[float], list[tuple[str, str]]]:
    """Pair each change on the wire with the first later painting of that state, per model, in order."""
    samples: list[float] = []
    missing: list[tuple[str, str]] = []
    for model in sorted({m for m, _, _ in raw}):
        shown = [(w, t) for m, w, t in ui if m == model]
        mine = [(w, t) for m, w, t in raw if m == model]
        i = 0
        for j, (w, t) in enumerate(mine):
            # the painting must come before the state after next changed on the wire (else it is another one)
            horizon = mine[j + 2][1] if j + 2 < len(mine) else float("inf")
            k = next((k for k in range(i, len(shown)) if shown[k][0] == w and shown[k][1] < horizon), None)
            if k is None:
                missing.append((model, w))
                continue
            samples.append((shown[k][1] - t) * 1000)
            i = k + 1
    return samples, missing


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 25))
