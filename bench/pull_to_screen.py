"""A pull's progress reaching the screen: the router's `download_progress` event -> the downloading row painted
with it, through the real Fleet, in the real (headless) app. Target: p95 <= 300 ms.

The hub stand-in serves a SIZE file (default 500 MB) at RATE (default 50 MB/s) from a process of its own; a real
router downloads it. A thread reading the router's SSE on a plain socket stamps each event's bytes done as it
leaves the socket; the dashboard (App.run_test, headless, the same router through the real Fleet) stamps each
figure its row shows after the refresh that paints it. Each event's figure is told to the row within
DOWNLOAD_SHOWN_WITHIN, with the newest figure: two figures are printed.
- each event -> the first paint showing its figure or a newer one (how old what the screen shows can be);
- each painted figure -> from its own event (the delay of a figure that is shown).

Run: python -m bench.pull_to_screen [--size-mb 500] [--rate-mb 50]
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import time
from collections.abc import Collection, Mapping
from typing import Any

from app.config import Config, MachineConfig
from app.services.core.router_types import ModelInfo, RouterState
from app.services.fleet import Fleet
from app.services.machine.machine import DOWNLOAD_SHOWN_WITHIN
from app.ui.app import make_app
from bench.common import figures, workdir
from bench.pull_cost import NAME, RawEvents, router_with_hub
from tests.helpers.router import RouterProc


async def follow(router: RouterProc) -> tuple[dict[int, float], list[tuple[int, float]]]:
    """(raw: bytes done -> arrival, painted: (bytes done, painted at)) for one download of NAME."""
    cfg = Config(machines=(MachineConfig(name="bench", url=router.url),))
    painted: list[tuple[int, float]] = []
    raw = RawEvents(router.port)
    fleet = Fleet(cfg)
    app = make_app(cfg, fleet)
    async with app.run_test(size=(160, 50)) as pilot:
        table = app.dashboard.model_table
        show = table.show
        last = -1

        def stamp(
            machine: str,
            models: Any,
            stale: bool = False,
            activity: Any = None,
            only: Collection[str] | None = None,
            by_id: Mapping[str, ModelInfo] | None = None,
        ) -> Any:
            nonlocal last
            models = tuple(models)
            diff = show(machine, models, stale, activity, only, by_id)
            m = next((m for m in models if m.id == NAME), None)
            if m is not None and m.download is not None and m.download.done != last:
                done = last = m.download.done
                table.call_after_refresh(lambda: painted.append((done, time.monotonic())))
            return diff

        table.show = stamp  # type: ignore[method-assign]
        while fleet.view("bench").router_state is not RouterState.ATTACHED:
            await pilot.pause(0.05)
        raw.start()
        raw.ready.wait(5)
        await asyncio.sleep(0.5)
        await fleet.pull("bench", NAME)
        await asyncio.sleep(1.0)
    return raw.seen, painted


def delays(raw: dict[int, float], painted: list[tuple[int, float]]) -> tuple[list[float], list[float]]:
    shown = sorted(painted)  # by figure: bytes done only grow
    figures_shown = [d for d, _ in shown]
    reach: list[float] = []
    for done, at in sorted(raw.items()):
        i = bisect.bisect_left(figures_shown, done)
        later = [t for _, t in shown[i:] if t >= at]
        if later:
            reach.append((min(later) - at) * 1000)
    own = [(t - raw[d]) * 1000 for d, t in painted if d in raw]
    return reach, own


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=float, default=500.0)
    ap.add_argument("--rate-mb", type=float, default=50.0)
    a = ap.parse_args()
    with router_with_hub(workdir(), int(a.size_mb * 1e6), a.rate_mb * 1e6) as router:
        raw, painted = asyncio.run(follow(router))
    reach, own = delays(raw, painted)
    print(f"pull of {a.size_mb:.0f} MB at {a.rate_mb:.0f} MB/s: {len(raw)} router progress events, "
          f"{len(painted)} paints of the row (each figure told within {DOWNLOAD_SHOWN_WITHIN} s)")  # fmt: skip
    print(figures("router event -> a paint showing it or newer", reach))
    print(figures("painted figure -> from its own router event", own))


if __name__ == "__main__":
    main()
