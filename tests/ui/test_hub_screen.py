"""The hub screen and the downloading row, against a real router and the hub stand-in through the real Fleet: `d`
opens the screen, a search lists repos, Enter lists a repo's quants with fit verdicts, Enter pulls; the model
table shows the downloading row with its progress; `u` on it cancels; the palette offers the pull."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable, Input

from app.config import Config, MachineConfig
from app.services.core.download_meter import DownloadMeters
from app.services.core.fleet_events import ModelsUpdated
from app.services.core.router_types import ModelInfo, ModelState
from app.services.fleet import Fleet
from app.ui.app import HerdApp, make_app
from app.ui.screens.hub import HubScreen, recent_choices
from app.ui.state.herd_state import HerdState
from tests.helpers.hub_standin import TINY_REPO, HubStandin
from tests.helpers.router import RouterProc
from tests.helpers.screen import record_notifications
from tests.helpers.wait import wait_for

SIZE = (140, 40)
Q4 = f"{TINY_REPO}:Q4_K_M"


@pytest.fixture
def hub_app(make_router: Any, hub: HubStandin, tmp_path: Path) -> HerdApp:
    env = {"MODEL_ENDPOINT": hub.url, "LLAMA_CACHE": str(tmp_path / "cache")}
    router: RouterProc = make_router(env=env)
    cfg = Config(machines=(MachineConfig(name="box", url=router.url, hub=hub.url),))
    return make_app(cfg, Fleet(cfg))


def status(app: HerdApp, model: str) -> str:
    row = app.dashboard.model_table.rows_now.get(model)
    return row[1].text if row else ""


def table_text(screen: HubScreen) -> str:
    table: DataTable[Any] = screen.query_one("#hub-table", DataTable)
    return "\n".join(" ".join(str(c) for c in table.get_row_at(i)) for i in range(table.row_count))


async def test_search_list_pull_progress_and_cancel(hub_app: HerdApp, hub: HubStandin) -> None:
    app = hub_app
    notes = record_notifications(app)
    hub.rate = 60_000.0  # ~8 s for the 451 KB file: the row shows progress, and `u` cancels it mid-way
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_for(lambda: "alpha" in app.dashboard.model_table.rows_now, pilot=pilot)
        await pilot.press("d")
        await wait_for(lambda: isinstance(app.screen, HubScreen), pilot=pilot)
        screen = app.screen
        assert isinstance(screen, HubScreen)
        screen.query_one("#hub-query", Input).value = "tiny"
        await pilot.press("enter")
        await wait_for(lambda: TINY_REPO in table_text(screen), pilot=pilot, timeout=10)
        await pilot.press("enter")  # the first repo: its quants
        await wait_for(lambda: Q4 in table_text(screen), pilot=pilot, timeout=20)
        assert "fits" in table_text(screen)
        assert ("box", Q4) in [c[:2] for c in recent_choices]
        await pilot.press("enter")  # the first quant (the smallest): pulled
        await wait_for(lambda: not isinstance(app.screen, HubScreen), pilot=pilot)
        await wait_for(lambda: "/s" in status(app, Q4), pilot=pilot, timeout=20)  # a rate from the second event
        assert "downloading" in status(app, Q4) and "%" in status(app, Q4)
        app.dashboard.model_table.move_cursor(row=app.dashboard.model_table.get_row_index(Q4))
        await pilot.pause()
        await pilot.press("u")
        await wait_for(lambda: any("cancelled on request" in n[2] for n in notes), pilot=pilot, timeout=30)
        await wait_for(lambda: Q4 not in app.dashboard.model_table.rows_now, pilot=pilot, timeout=10)


def test_a_downloads_progress_moves_its_row_not_the_card() -> None:
    """Several progress events a second: the card (counts and states) is not repainted for them (it was: 16 % of a
    core for the dashboard during a 1 GB download, bench/pull_cost.py), the row is; a new downloading row is news
    for the card too."""
    st = HerdState(["box"])
    meters = DownloadMeters()
    first = ModelInfo(Q4, ModelState.DOWNLOADING, download=meters.update(Q4, 0, 100, now=0.0))
    ch = st.apply([ModelsUpdated("box", (first,))], now=0.0)
    assert ch.cards == {"box"}
    later = ModelInfo(Q4, ModelState.DOWNLOADING, download=meters.update(Q4, 50, 100, now=1.0))
    ch = st.apply([ModelsUpdated("box", (later,))], now=1.0)
    assert ch.cards == frozenset() and ch.rows == {("box", Q4)}
    done = ModelInfo(Q4, ModelState.UNLOADED, source="cache")
    assert st.apply([ModelsUpdated("box", (done,))], now=2.0).cards == {"box"}
