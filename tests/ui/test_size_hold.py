"""Columns do not jitter: a status column is as wide as a loading badge from the start (test_model_table_widths);
with room to spare, a column that widened beyond that (a download's badge) keeps its width until nothing has needed
it for HOLD_SECONDS; without room it narrows at once."""

from __future__ import annotations

import pytest

from app.config import Config
from app.services.core.download_meter import PullProgress
from app.services.core.fleet_events import ModelsChanged, Problem
from app.services.core.router_types import LoadProgress, ModelInfo, ModelState
from app.ui.app import HerdApp, make_app
from app.ui.dashboard.machine_card import MachineCard
from app.ui.widgets import sticky_sizes
from app.ui.widgets.sticky_sizes import SizeHold, table_width
from tests.helpers.clock import SteppedClock
from tests.helpers.standin_fleet import NOW, StandInFleet, demo_fleet
from tests.helpers.wait import wait_for
from tests.ui.test_model_table_widths import status_of, width, with_gemma


def test_a_column_is_held_then_narrows_and_never_past_the_room() -> None:
    clock = SteppedClock()
    hold = SizeHold(clock)
    assert hold.widths([5, 10], room=100) == [5, 10]
    assert hold.widths([5, 20], room=100) == [5, 20]  # wider: at once
    clock.t += 1
    assert hold.widths([5, 10], room=100) == [5, 20]  # narrower: held
    assert hold.due_in() == pytest.approx(sticky_sizes.HOLD_SECONDS - 1)
    clock.t += 5
    assert hold.widths([5, 20], room=100) == [5, 20]  # needed again: held from now
    assert hold.due_in() == pytest.approx(sticky_sizes.HOLD_SECONDS)
    assert hold.widths([5, 10], room=table_width([5, 20]) - 1) == [5, 10]  # the held width does not fit: at once
    assert hold.reset([3, 3]) == [3, 3]


def gemma_loaded(monkeypatch: pytest.MonkeyPatch) -> tuple[HerdApp, StandInFleet, tuple[ModelInfo, ...]]:
    """The demo's workstation with gemma loaded, and a hold of 1 s."""
    monkeypatch.setattr(sticky_sizes, "HOLD_SECONDS", 1.0)
    fleet = demo_fleet()
    loaded = with_gemma(state=ModelState.LOADED, progress=None)
    fleet.model_lists["workstation"] = loaded
    return make_app(Config(), fleet, frozen_time=NOW), fleet, loaded


async def test_status_keeps_its_width_between_loads_then_narrows(monkeypatch: pytest.MonkeyPatch) -> None:
    app, fleet, loaded = gemma_loaded(monkeypatch)
    async with app.run_test(size=(200, 40)) as pilot:
        table = app.dashboard.model_table
        await wait_for(lambda: len(table.rows_now) == 5, pilot=pilot)
        await pilot.pause(0.1)
        settled = width(table, "status")
        progress = LoadProgress(("text_model",), "text_model", 0.42)
        fleet.emit(ModelsChanged("workstation", with_gemma(state=ModelState.LOADING, progress=progress)))
        await wait_for(lambda: "42%" in status_of(app, "gemma-3-4b-it"), pilot=pilot)
        assert width(table, "status") == settled  # a loading badge is what the column holds anyway
        download = PullProgress("gemma-3-4b-it", 120 << 20, 270 << 20, 31e6, 5.0)
        fleet.emit(ModelsChanged("workstation", with_gemma(state=ModelState.DOWNLOADING, download=download)))
        await wait_for(lambda: "120M/270M" in status_of(app, "gemma-3-4b-it"), pilot=pilot)
        wide = width(table, "status")
        assert wide > settled
        fleet.emit(ModelsChanged("workstation", loaded))
        await wait_for(lambda: "loaded" in status_of(app, "gemma-3-4b-it"), pilot=pilot)
        assert width(table, "status") == wide  # held: no column moved
        await wait_for(lambda: width(table, "status") == settled, pilot=pilot)  # then narrowed, by itself


async def test_a_cards_problem_lines_keep_their_room_for_a_while(monkeypatch: pytest.MonkeyPatch) -> None:
    app, fleet, _ = gemma_loaded(monkeypatch)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(lambda: len(app.dashboard.model_table.rows_now) == 5, pilot=pilot)
        card = next(c for c in app.dashboard.machines.query(MachineCard) if c.machine == "workstation")
        await wait_for(lambda: card.size.height > 0, pilot=pilot)
        plain_height = card.size.height
        fleet.emit(Problem("workstation", "gemma-3-4b-it failed to load (exit code 1)", model="gemma-3-4b-it"))
        await wait_for(lambda: card.size.height > plain_height, pilot=pilot)
        with_problem = card.size.height
        progress = LoadProgress(("text_model",), "text_model", 0.42)
        fleet.emit(ModelsChanged("workstation", with_gemma(state=ModelState.LOADING, progress=progress)))  # again
        await wait_for(lambda: "failed" not in " ".join(t.plain for t in card._shown or []), pilot=pilot)
        assert card.size.height == with_problem  # the room is kept: nothing below the card moved
        await wait_for(lambda: card.size.height == plain_height, pilot=pilot)  # then given back, by itself
