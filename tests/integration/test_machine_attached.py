"""An attach-only machine: a router that goes away is shown unreachable with the reason, and comes back by itself."""

from __future__ import annotations

import asyncio

from app.config import MachineConfig
from app.services.machine import Machine
from app.services.types import FleetEvent, ModelState, RouterState
from tests.helpers.router import RouterProc


async def wait_for(pred: object, timeout: float = 15) -> None:
    async with asyncio.timeout(timeout):
        while not pred():  # type: ignore[operator]
            await asyncio.sleep(0.05)


async def test_router_away_and_back(router: RouterProc) -> None:
    events: list[FleetEvent] = []
    m = Machine(MachineConfig(name="box", url=router.url), events.append)
    m.start()
    try:
        await wait_for(lambda: m.view.router_state is RouterState.ATTACHED and m.view.stream == "sse")
        assert set(m.models) == {"alpha", "beta", "broken"}
        router.stop()
        await wait_for(lambda: m.view.router_state is RouterState.UNREACHABLE, timeout=5)
        assert m.view.router_reason and m.view.stream == "down"
        router.start()
        await wait_for(lambda: m.view.router_state is RouterState.ATTACHED and m.view.stream == "sse")
        await (await m.router_client()).load("alpha")
        await wait_for(lambda: m.models["alpha"].state is ModelState.LOADED)
    finally:
        await m.close()
