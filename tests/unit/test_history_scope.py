"""The history store reads for one config: its routers' rows under its names (issue 38, case 1). The demo's
`workstation` (router demo-workstation) and an operator's `workstation` (router default) are two routers."""

from __future__ import annotations

from pathlib import Path

from app.config import MachineConfig
from app.services.history.scope import router_scope, scope_names
from app.services.history.store import HistoryRow, HistoryStore

DEMO = MachineConfig(name="workstation", router="demo-workstation")
MINE = MachineConfig(name="workstation")  # the README's example name, the router "default"
MINE_RENAMED = MachineConfig(name="ws")


def row(t: float, cfg: MachineConfig, model: str, reason: str, detail: str = "") -> HistoryRow:
    return HistoryRow(t, cfg.name, cfg.router, model, "loaded", "unloaded", reason, detail, scope=router_scope(cfg))


def test_scopes_tell_routers_apart_and_not_names() -> None:
    assert router_scope(MINE) == router_scope(MINE_RENAMED) != router_scope(DEMO)
    far = MachineConfig(name="a", host="gpu.lan", user="llama")
    assert router_scope(far) == router_scope(MachineConfig(name="b", host="gpu.lan", user="llama", port=22))
    assert router_scope(far) != router_scope(MachineConfig(name="a", host="gpu2.lan", user="llama"))
    attached = MachineConfig(name="a", url="http://127.0.0.1:8080/")
    assert router_scope(attached) == "local/url:http://127.0.0.1:8080"


async def test_a_config_reads_its_own_routers_rows_under_its_names(tmp_path: Path) -> None:
    path = str(tmp_path / "h.db")
    writer = HistoryStore(path, clock=lambda: 1000.0)
    await writer.add(
        [
            row(100.0, DEMO, "chat-small", "evicted", "least recently used, for code-mini"),
            row(110.0, MINE, "alpha", "requested"),
            HistoryRow(120.0, "workstation", "default", "beta", "loaded", "unloaded", "crashed", ""),  # unscoped
        ]
    )
    writer.close()

    mine = HistoryStore(path, clock=lambda: 1000.0, names=scope_names([MINE]))
    assert [(r.model, r.machine) for r in await mine.query()] == [("alpha", "workstation")]
    assert [r.model for r in await mine.query(machine="workstation")] == ["alpha"]
    assert [r.model for r in await mine.latest_per_model(0.0)] == ["alpha"]  # the model table's reason cell
    assert b"chat-small" not in await mine.query_table() and b"chat-small" not in await mine.query_json()
    mine.close()

    renamed = HistoryStore(path, clock=lambda: 1000.0, names=scope_names([MINE_RENAMED]))
    assert [(r.model, r.machine) for r in await renamed.query(machine="ws")] == [("alpha", "ws")]
    assert b'"machine":"ws"' in await renamed.query_json()
    assert b"ws" in await renamed.query_table() and b"workstation" not in await renamed.query_table()
    renamed.close()

    every = HistoryStore(path, clock=lambda: 1000.0)  # `history --all`: every row as recorded
    assert [r.model for r in await every.query()] == ["chat-small", "alpha", "beta"]
    every.close()


async def test_who_asked_is_found_by_the_router_under_either_name(tmp_path: Path) -> None:
    path = str(tmp_path / "h.db")
    a = HistoryStore(path, clock=lambda: 1000.0, names=scope_names([MINE]))
    await a.note_request("workstation", "alpha", "load", "key l")
    b = HistoryStore(path, clock=lambda: 1000.0, names=scope_names([MINE_RENAMED]))
    assert await b.requests("ws", 0.0) == [(1000.0, "alpha", "load", "key l")]
    c = HistoryStore(path, clock=lambda: 1000.0, names=scope_names([DEMO]))
    assert await c.requests("workstation", 0.0) == []
    for s in (a, b, c):
        s.close()
