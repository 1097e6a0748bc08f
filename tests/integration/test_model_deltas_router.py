"""Per-model deltas from a real router: a status event is sent up as the one model it changed (ModelsUpdated), the
whole list only on a list read (ModelsChanged)."""

from __future__ import annotations

from app.config import MachineConfig
from app.services.core.fleet_events import FleetEvent, ModelsChanged, ModelsUpdated
from app.services.core.router_types import ModelState, RouterState
from app.services.machine.machine import Machine
from tests.helpers.router import RouterProc
from tests.helpers.wait import wait_for


async def test_a_status_event_sends_only_the_model_it_changed(router: RouterProc) -> None:
    events: list[FleetEvent] = []
    m = Machine(MachineConfig(name="box", url=router.url), events.append)
    m.start()
    try:
        await wait_for(lambda: m.view.router_state is RouterState.ATTACHED and m.view.stream == "sse", timeout=15)
        lists = [e for e in events if isinstance(e, ModelsChanged)]
        assert lists and {x.id for x in lists[-1].models} == {"alpha", "beta", "broken"}  # the list read: whole
        mark = len(events)
        await (await m.router_client()).load("alpha")
        await wait_for(lambda: m.models["alpha"].state is ModelState.LOADED, timeout=15)
        later = events[mark:]
        deltas = [e for e in later if isinstance(e, ModelsUpdated)]
        assert deltas, "no delta for the load"
        assert all(len(d.models) == 1 and d.models[0].id == "alpha" for d in deltas), deltas
        assert deltas[-1].models[0] == m.models["alpha"]  # the delta is the model as the machine now knows it
        assert not [e for e in later if isinstance(e, ModelsChanged)], "a status event sent the whole list"
        assert {x.id for x in m.models.values()} == {"alpha", "beta", "broken"}  # the others still known
    finally:
        await m.close()
