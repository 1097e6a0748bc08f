"""An attach-only machine: a router that goes away is shown unreachable with the reason, and comes back by itself."""

from __future__ import annotations

from app.config import MachineConfig
from app.services.core.fleet_events import FleetEvent
from app.services.core.router_types import ModelState, RouterState
from app.services.machine.machine import Machine
from tests.helpers.router import RouterProc
from tests.helpers.wait import wait_for


async def test_router_away_and_back(router: RouterProc) -> None:
    events: list[FleetEvent] = []
    m = Machine(MachineConfig(name="box", url=router.url), events.append)
    m.start()
    try:
        await wait_for(lambda: m.view.router_state is RouterState.ATTACHED and m.view.stream == "sse", timeout=15)
        assert set(m.models) == {"alpha", "beta", "broken"}
        router.stop()
        await wait_for(lambda: m.view.router_state is RouterState.UNREACHABLE, timeout=5)
        assert m.view.router_reason and m.view.stream == "down"
        router.start()
        await wait_for(lambda: m.view.router_state is RouterState.ATTACHED and m.view.stream == "sse", timeout=15)
        await (await m.router_client()).load("alpha")
        await wait_for(lambda: m.models["alpha"].state is ModelState.LOADED, timeout=15)
    finally:
        await m.close()
