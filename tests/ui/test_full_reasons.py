"""The selected item's full text is on screen, wrapped (issue 38, case 3): the card's router reason and failure,
and the history's highlighted row, were cut at the edge (`least recently used, for`), readable only by scrolling."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from textual.widgets import DataTable, Static

from app.config import Config
from app.services.core.fleet_events import MachineChanged, Problem
from app.services.core.router_types import RouterState
from app.services.history.store import HistoryRow, HistoryStore
from app.ui.app import HerdApp, make_app
from app.ui.screens.history import HistoryScreen
from tests.helpers.screen import screen_text
from tests.helpers.standin_fleet import NOW, demo_fleet
from tests.helpers.wait import wait_for

REASON = "GET http://127.0.0.1:59999/models/: connection refused ([Errno 111] Connect call failed ('127.0.0.1', 59999))"


def machines_pane(app: HerdApp) -> str:
    """The machines pane's words on one line, as painted (a wide pane lists compact lines and the selected card in
    full): each screen line up to where the models pane begins beside it."""
    # Where the machines pane's right border meets the next pane's left one (heavy when that pane has the focus).
    left = [re.split("│[│┃]|╮[╭┏]", line)[0] for line in screen_text(app).splitlines()]
    return " ".join(" ".join(left).replace("│", " ").split())


@pytest.mark.parametrize("size", [(100, 40), (200, 40)])  # a side column of cards; one line per card
async def test_the_selected_card_says_the_whole_router_reason_and_failure(size: tuple[int, int]) -> None:
    fleet = demo_fleet()
    app = make_app(Config(), fleet, frozen_time=NOW)
    async with app.run_test(size=size) as pilot:
        await wait_for(lambda: len(app.dashboard.model_table.rows_now) == 5, pilot=pilot)
        view = dataclasses.replace(
            fleet.views["workstation"], router_state=RouterState.UNREACHABLE, router_reason=REASON
        )
        fleet.emit(MachineChanged("workstation", view))
        failure = "load chat-medium: " + "the model is corrupted or truncated, " * 3 + "see the log"
        fleet.emit(Problem("workstation", failure, "chat-medium"))
        await wait_for(lambda: "see the log" in machines_pane(app), pilot=pilot, what="the whole failure")
        text = machines_pane(app)
        assert REASON in text.replace("/ ", "/")  # wrapped (a URL may break after a slash), not cut
        assert "not answering" not in text
        # another card is kept short: its reason and failure are on its own card once it is selected
        fleet.emit(Problem("gpu-box", failure.replace("see the log", "see the gpu log"), "chat-medium"))
        await pilot.press("2")
        await wait_for(lambda: "see the gpu log" in machines_pane(app), pilot=pilot)


async def test_the_history_shows_the_highlighted_row_in_full(tmp_path: Path) -> None:
    store = HistoryStore(str(tmp_path / "h.db"), clock=lambda: NOW)
    detail = "least recently used, for code-mini (the router keeps 1 model at once; " + "x" * 150 + " END)"
    await store.add(
        [
            HistoryRow(NOW - 60, "workstation", "default", "chat-small", "loaded", "unloaded", "evicted", detail),
            HistoryRow(NOW - 30, "workstation", "default", "code-mini", "unloaded", "loading", "requested", "by key l"),
        ]
    )
    app = make_app(Config(), demo_fleet(), frozen_time=NOW, history=store)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("h")
        await wait_for(lambda: isinstance(app.screen, HistoryScreen), pilot=pilot)
        screen = app.screen
        table = screen.query_one("#history-table", DataTable)
        shown = screen.query_one("#history-detail", Static)
        await wait_for(lambda: table.row_count == 2, pilot=pilot)
        await wait_for(lambda: "by key l" in str(shown.render()), pilot=pilot)  # newest first, highlighted
        table.focus()
        await pilot.press("down")
        await wait_for(lambda: "END)" in str(shown.render()), pilot=pilot, what="the whole detail")
        assert detail in " ".join(str(shown.render()).split()).replace("( ", "(")
    store.close()


async def test_a_models_failure_on_the_card_ends_with_the_childs_own_error_line_in_full() -> None:
    """The key log line ("... model is corrupted o") was cut at the log panel's edge: the card says it whole."""
    from app.services.core.errors import ModelFailed

    fleet = demo_fleet()
    app = make_app(Config(), fleet, frozen_time=NOW)
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_for(lambda: len(app.dashboard.model_table.rows_now) == 5, pilot=pilot)
        key = "llama_model_load: error loading model: tensor 'blk.0' data is not within the file bounds, model is corrupted or incomplete"  # noqa: E501
        error = ModelFailed("broken", 1, ["I srv load_model: loading", f"E {key}", "I exited"])
        fleet.emit(
            Problem("workstation", f"broken failed to load on workstation (exit code 1)\n{key}", "broken", error=error)
        )
        await wait_for(lambda: "corrupted or incomplete" in machines_pane(app), pilot=pilot)
        assert f"broken failed to load (exit code 1): {key}" in machines_pane(app).replace("/ ", "/")
