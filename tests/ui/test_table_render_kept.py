"""`f` (the fleet view and back) does not draw the tables' lines anew: a focus change and being shown again at the
same size keep the drawn lines (DataTable dropped them all). A theme change still draws them anew."""

from __future__ import annotations

from typing import Any

from app.config import Config
from app.ui.app import make_app
from app.ui.dashboard.model_table import KeyedTable
from tests.helpers.standin_fleet import demo_fleet
from tests.helpers.wait import wait_for


def count_renders(table: KeyedTable, into: list[int]) -> None:
    """Count lines drawn: the table draws a line only when it is not in its cache."""
    original = table.render_row

    def counted(index: int, *a: Any, **k: Any) -> Any:
        into.append(index)
        return original(index, *a, **k)

    table.render_row = counted  # type: ignore[method-assign]


async def test_the_fleet_view_and_back_reuse_rendered_cells_and_a_theme_change_does_not() -> None:
    app = make_app(Config(), demo_fleet())
    async with app.run_test(size=(140, 45)) as pilot:
        dash = app.dashboard
        await wait_for(lambda: dash.model_table.row_count > 0 and dash.model_table.has_focus, pilot=pilot)
        for _ in range(2):  # each table rendered once focused and once not
            await pilot.press("f")
            await wait_for(lambda: dash.fleet_table.has_focus, pilot=pilot)
            await pilot.press("f")
            await wait_for(lambda: dash.model_table.has_focus, pilot=pilot)
        await pilot.pause(0.3)
        renders: list[int] = []
        count_renders(dash.model_table, renders)
        count_renders(dash.fleet_table, renders)
        for _ in range(2):
            await pilot.press("f")
            await wait_for(lambda: dash.fleet_table.has_focus, pilot=pilot)
            await pilot.pause(0.2)
            await pilot.press("f")
            await wait_for(lambda: dash.model_table.has_focus, pilot=pilot)
            await pilot.pause(0.2)
        assert renders == [], f"{len(renders)} lines drawn anew by the fleet view and back"

        app.theme = "textual-light" if app.theme != "textual-light" else "textual-dark"
        await wait_for(lambda: len(renders) >= dash.model_table.row_count, pilot=pilot)
