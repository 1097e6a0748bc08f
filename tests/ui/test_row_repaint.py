"""A row whose cells change in place is drawn again alone: a download's progress moves its state cell (the column
the table sorts by) twice a second, and the whole model table drawn for each was most of what a pull cost the
screen. A change that moves rows (a new state's place in the sort) still draws the table in its new order."""

from __future__ import annotations

from functools import partial
from typing import Any

from app.config import Config
from app.services.core.download_meter import PullProgress
from app.services.core.fleet_events import ModelsChanged
from app.services.core.router_types import ModelState
from app.ui.app import HerdApp, make_app
from tests.helpers.standin_fleet import NOW, demo_fleet
from tests.helpers.wait import wait_for
from tests.ui.test_model_table_widths import status_of, with_gemma


def _shows(app: HerdApp, figure: str) -> bool:
    return figure in status_of(app, "gemma-3-4b-it")


async def test_progress_redraws_its_row_and_a_move_redraws_the_table() -> None:
    fleet = demo_fleet()
    app = make_app(Config(), fleet, frozen_time=NOW)
    async with app.run_test(size=(200, 40)) as pilot:
        table = app.dashboard.model_table
        await wait_for(lambda: len(table.rows_now) == 5, pilot=pilot)
        table.sort_index = table.column_index("status")
        table._resort()
        orders: list[list[str]] = []
        redrawn: list[list[str]] = []
        set_order, rows_changed = table.set_order, table.rows_changed

        def recorded_order(order: list[str]) -> None:
            orders.append(list(order))
            set_order(order)

        def recorded_rows(keys: Any) -> None:
            redrawn.append(list(keys))
            rows_changed(keys)

        table.set_order = recorded_order  # type: ignore[method-assign]
        table.rows_changed = recorded_rows  # type: ignore[method-assign]
        for done in (10, 20, 30):
            download = PullProgress("gemma-3-4b-it", done << 20, 270 << 20, 31e6, 5.0)
            fleet.emit(ModelsChanged("workstation", with_gemma(state=ModelState.DOWNLOADING, download=download)))
            await wait_for(partial(_shows, app, f"{done}M/270M"), pilot=pilot)
        assert len(orders) <= 1  # the first download badge may move the row; its progress never does
        assert sum(1 for keys in redrawn if any("gemma-3-4b-it" in k for k in keys)) >= 2
        assert all(len(keys) == 1 for keys in redrawn[-2:])  # that row alone
        fleet.emit(ModelsChanged("workstation", with_gemma(state=ModelState.LOADED, progress=None)))
        await wait_for(lambda: "loaded" in status_of(app, "gemma-3-4b-it"), pilot=pilot)
        moved = table.order.copy()
        assert orders and orders[-1] == moved  # another state sorts elsewhere: the table in its new order
