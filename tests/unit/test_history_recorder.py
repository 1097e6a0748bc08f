"""Router and machine transitions as the recorder words them, driven by the fleet's own event types (a real Fleet
of one attached machine that is never started; the events are the ones its Machine would emit)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from app.config import load_config
from app.services.core.fleet_events import MachineChanged, MachineView, ModelsChanged
from app.services.core.host_types import Connection
from app.services.core.router_types import ModelInfo, ModelState
from app.services.core.router_types import RouterState as RS
from app.services.fleet import Fleet
from app.services.history.recorder import HistoryRecorder
from app.services.history.store import HistoryStore


async def test_router_and_machine_transitions_with_reasons(tmp_path: Path) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text('[[machines]]\nname = "box"\nurl = "http://127.0.0.1:9"\n')
    fleet = Fleet(load_config(cfg))
    now = [1000.0]
    store = HistoryStore(str(tmp_path / "h.db"), clock=lambda: now[0])
    rec = HistoryRecorder(fleet, store, clock=lambda: now[0])
    v = MachineView(name="box", host="", connection=Connection.CONNECTED, managed=False)

    async def see(**changes: object) -> None:
        nonlocal v
        now[0] += 10
        v = dataclasses.replace(v, **changes)  # type: ignore[arg-type]
        await rec.handle(MachineChanged("box", v))

    await rec.handle(MachineChanged("box", v))  # UNKNOWN: where it starts, not a change
    await see(router_state=RS.RUNNING, pid=42, started_at=500.0)
    await see(router_state=RS.NOT_ANSWERING, router_reason="/health: no answer within 3 s")
    await see(router_state=RS.RUNNING, router_reason="")
    await see(connection=Connection.UNREACHABLE, connection_reason="ssh: connection refused")
    await see(connection=Connection.CONNECTED, connection_reason="")
    await store.note_request("box", "", "stop", "the dashboard")
    await see(router_state=RS.STOPPED, router_reason="stopped on request")
    await see(router_state=RS.RUNNING)
    await see(router_state=RS.EXITED, router_reason="router (pid 42) exited without being asked",
              log_tail=("E boom: out of memory",))  # fmt: skip
    got = [(r.from_state, r.to_state, r.reason, r.detail) for r in await store.query(machine="box")]
    assert got[0][:3] == ("unknown", "running", "adopted") and got[0][3].startswith("pid 42")
    assert got[1] == ("running", "not answering", "not answering", "/health: no answer within 3 s")
    assert got[2][:3] == ("not answering", "running", "started")
    assert got[3] == ("connected", "unreachable", "machine unreachable", "ssh: connection refused")
    assert got[4][:3] == ("unreachable", "connected", "machine back")
    assert got[5] == ("running", "stopped", "requested", "by the dashboard; stopped on request")
    assert got[6][:3] == ("stopped", "running", "started")
    assert got[7][:3] == ("running", "exited", "router exited") and "out of memory" in got[7][3]

    # Models on a router that went away went with it.
    alpha = ModelInfo("alpha", ModelState.LOADED)
    await rec.handle(ModelsChanged("box", (alpha,)))
    await rec.handle(ModelsChanged("box", (dataclasses.replace(alpha, state=ModelState.UNLOADED),)))
    (gone,) = await store.query(model="alpha")
    assert (gone.from_state, gone.to_state, gone.reason) == ("loaded", "unloaded", "router exited")
    await rec.settled()
    store.close()
