"""The table's columns fit what they show now: a "loading 42%" badge widened status for good, and at 80 columns
pushed "source" off the screen. A column narrows again when its widest cell narrows, is filtered out, or belongs to
another machine."""

from __future__ import annotations

import dataclasses
from typing import Any

from app.config import Config
from app.services.core.fleet_events import ModelsChanged
from app.services.core.router_types import LoadProgress, ModelInfo, ModelState
from app.ui.app import HerdApp, make_app
from app.ui.dashboard.model_table import KeyedTable
from tests.helpers.screen import screen_text
from tests.helpers.standin_fleet import NOW, demo_fleet, workstation_models
from tests.helpers.wait import wait_for

SIZE = (80, 24)


def with_gemma(**changes: Any) -> tuple[ModelInfo, ...]:
    return tuple(dataclasses.replace(m, **changes) if m.id == "gemma-3-4b-it" else m for m in workstation_models())


def width(table: KeyedTable, column: str) -> int:
    return table.column_width(column)


def status_of(app: HerdApp, model: str) -> str:
    return app.dashboard.model_table.rows_now[model][1].text


async def test_status_narrows_again_when_loading_ends() -> None:
    fleet = demo_fleet()
    loaded = with_gemma(state=ModelState.LOADED, progress=None)
    fleet.model_lists["workstation"] = loaded
    app = make_app(Config(), fleet, frozen_time=NOW)
    async with app.run_test(size=SIZE) as pilot:
        table = app.dashboard.model_table
        await wait_for(lambda: len(table.rows_now) == 5, pilot=pilot)
        await pilot.pause(0.1)
        settled, virtual = width(table, "status"), table.virtual_size.width
        for _ in range(3):  # loads come and go: the column must come back each time
            progress = LoadProgress(("text_model",), "text_model", 0.42)
            fleet.emit(ModelsChanged("workstation", with_gemma(state=ModelState.LOADING, progress=progress)))
            await wait_for(lambda: "42%" in status_of(app, "gemma-3-4b-it"), pilot=pilot)
            assert width(table, "status") > settled
            fleet.emit(ModelsChanged("workstation", loaded))
            await wait_for(lambda: "loaded" in status_of(app, "gemma-3-4b-it"), pilot=pilot)
            await pilot.pause(0.1)
            assert width(table, "status") == settled
            assert table.virtual_size.width == virtual  # the narrower column laid out too
        assert "42%" not in screen_text(app)


def fits(table: KeyedTable) -> bool:
    """Every column exactly as wide as its widest cell (or its header) among the rows shown now."""
    for i, c in enumerate(table.cols):
        cells = [len(row[i].text) for row in table.rows_now.values()]
        if width(table, c.key) != max(len(c.label), *cells):
            return False
    return True


async def test_a_filtered_out_widest_row_and_another_machine_narrow_their_columns() -> None:
    fleet = demo_fleet()
    app = make_app(Config(), fleet, frozen_time=NOW)
    async with app.run_test(size=SIZE) as pilot:
        table = app.dashboard.model_table
        await wait_for(lambda: len(table.rows_now) == 5, pilot=pilot)
        assert fits(table)
        widest = width(table, "status")  # "✖ failed (exit 1)" or the loading badge
        table.set_filter("qwen")  # the widest statuses are filtered out
        await wait_for(lambda: list(table.rows_now) == ["qwen2.5-coder-14b"], pilot=pilot)
        assert fits(table) and width(table, "status") == len(status_of(app, "qwen2.5-coder-14b")) < widest
        table.set_filter("")
        await wait_for(lambda: len(table.rows_now) == 5, pilot=pilot)
        assert fits(table)
        await pilot.press("2")  # gpu-box: its own widths, not the widest of both machines
        await wait_for(lambda: table.machine == "gpu-box" and len(table.rows_now) == 2, pilot=pilot)
        assert fits(table) and width(table, "status") < widest  # nothing failed or loading there
