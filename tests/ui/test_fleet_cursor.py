"""The fleet view follows its cursor: `l` on another machine's row acts there and the log panel and the machine's
highlight go with it; opening the fleet view keeps the cursor on the model it was on, and so does closing it."""

from __future__ import annotations

from app.config import Config
from app.ui.app import make_app
from app.ui.dashboard.fleet_table import fleet_key
from tests.helpers.standin_fleet import NOW, demo_fleet
from tests.helpers.wait import wait_for

SIZE = (120, 40)


async def test_the_log_and_the_machine_follow_the_fleet_cursor_and_the_cursor_is_kept() -> None:
    fleet = demo_fleet()
    app = make_app(Config(), fleet, frozen_time=NOW)
    async with app.run_test(size=SIZE) as pilot:
        dash = app.dashboard
        table = dash.model_table
        await wait_for(lambda: len(table.rows_now) == 5, pilot=pilot)
        table.move_cursor(row=table.get_row_index("mistral-7b"))
        await wait_for(lambda: table.selected_model() == "mistral-7b", pilot=pilot)
        await pilot.press("f")
        ft = dash.fleet_table
        assert dash.fleet_view and ft.selected() == ("workstation", "mistral-7b")  # not the first row

        ft.move_cursor(row=ft.get_row_index(fleet_key("gpu-box", "phi-4")))
        await wait_for(lambda: dash.selected_machine == "gpu-box", pilot=pilot)
        assert dash.machines.selected == "gpu-box" and dash.machines.card("gpu-box").selected
        assert not dash.machines.card("workstation").selected
        assert dash.logs.machine == "gpu-box" and dash.logs.current_model == "phi-4"
        await pilot.press("l")
        await wait_for(lambda: ("load", "gpu-box", "phi-4") in fleet.calls, pilot=pilot)

        await pilot.press("f")  # back: the machine the cursor was on, the cursor on the same model
        assert not dash.fleet_view
        assert table.machine == "gpu-box" and table.selected_model() == "phi-4"
        await pilot.press("f")
        assert ft.selected() == ("gpu-box", "phi-4")
