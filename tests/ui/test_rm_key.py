"""`D` on the dashboard removes a downloaded model, against a real router and the hub stand-in through the real Fleet:
a preset's own model is refused with the reason and no question; a pulled one that is loaded is asked about (the
question says it is unloaded first), then unloaded, removed, its cache file gone, told in a toast and in history."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rich.text import Text
from textual.widgets import Static

from app.config import Config, MachineConfig
from app.services.core.router_types import ModelState
from app.services.fleet import Fleet
from app.services.history.store import HistoryStore
from app.ui.app import HerdApp, make_app
from app.ui.screens.confirm import ConfirmScreen
from tests.helpers.hub_standin import TINY_REPO, HubStandin
from tests.helpers.router import RouterProc
from tests.helpers.screen import record_notifications
from tests.helpers.wait import wait_for

SIZE = (140, 40)
Q4 = f"{TINY_REPO}:Q4_K_M"


@pytest.fixture
def rm_app(
    make_router: Any, hub: HubStandin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[HerdApp, Fleet, Path]:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    cache = tmp_path / "cache"
    router: RouterProc = make_router(env={"MODEL_ENDPOINT": hub.url, "LLAMA_CACHE": str(cache)})
    cfg = Config(machines=(MachineConfig(name="box", url=router.url, hub=hub.url, hub_cache=str(cache)),))
    fleet = Fleet(cfg)
    fleet.history, fleet.asked_by = HistoryStore(), "the dashboard"
    return make_app(cfg, fleet), fleet, cache


def ggufs(cache: Path) -> list[Path]:
    return [p for p in cache.rglob("*.gguf") if p.is_file()]


async def test_rm_key_refuses_a_preset_model_then_asks_unloads_and_removes_a_pulled_one(
    rm_app: tuple[HerdApp, Fleet, Path],
) -> None:
    app, fleet, cache = rm_app
    notes = record_notifications(app)
    try:
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            table = app.dashboard.model_table
            await wait_for(lambda: "alpha" in table.rows_now, pilot=pilot)
            # A preset's own model: refused with the reason, no question asked, nothing removed.
            table.move_cursor(row=table.get_row_index("alpha"))
            await pilot.pause()
            await pilot.press("D")
            await wait_for(lambda: any("not from the download cache" in n[2] for n in notes), pilot=pilot)
            assert not isinstance(app.screen, ConfirmScreen)
            assert "alpha" in table.rows_now

            outcome = await fleet.pull("box", Q4)
            assert outcome.ok, outcome.cause
            assert ggufs(cache)
            await fleet.load("box", Q4)

            def loaded() -> bool:
                return any(m.id == Q4 and m.state is ModelState.LOADED for m in fleet.models("box"))

            await wait_for(loaded, pilot=pilot, timeout=30)
            await wait_for(lambda: Q4 in table.rows_now, pilot=pilot)
            table.move_cursor(row=table.get_row_index(Q4))
            await pilot.pause()
            await pilot.press("D")
            await wait_for(lambda: isinstance(app.screen, ConfirmScreen), pilot=pilot)
            body = app.screen.query_one("#confirm-body", Static).render()
            text = body.plain if isinstance(body, Text) else str(body)
            assert Q4 in text and "unloaded first" in text and "download cache" in text
            await pilot.press("y")
            await wait_for(lambda: any("file(s) gone" in n[2] for n in notes), pilot=pilot, timeout=60)
            await wait_for(lambda: Q4 not in table.rows_now, pilot=pilot, timeout=10)
            assert not ggufs(cache)
            assert fleet.history is not None
            rows = await fleet.history.query(machine="box")
            assert (Q4, "removed") in [(r.model, r.reason) for r in rows]
            assert not [n for n in notes if n[0] == "error"], notes
    finally:
        assert fleet.history is not None
        fleet.history.close()
