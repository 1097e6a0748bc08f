"""Filters do not stick where nobody expects them: Esc clears the one it belongs to (the log's search in the log
panel, the table's filter in the table), switching machines clears the log's search, and a filter in effect says
so plainly with how to clear it."""

from __future__ import annotations

from typing import Any

from textual.pilot import Pilot

from app.config import Config
from app.ui.app import HerdApp, make_app
from tests.helpers.screen import screen_text
from tests.helpers.standin_fleet import NOW, demo_fleet
from tests.helpers.wait import wait_for

SIZE = (120, 40)


async def started(app: HerdApp, pilot: Pilot[Any]) -> None:
    await wait_for(lambda: len(app.dashboard.model_table.rows_now) == 5, pilot=pilot)


async def test_escape_in_the_log_clears_its_search_and_says_how_while_it_hides_lines() -> None:
    app = make_app(Config(), demo_fleet(), frozen_time=NOW)
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        logs = app.dashboard.logs
        everything = len(logs.buffer)
        logs.focus()
        await pilot.press("ampersand", *"magic", "enter")
        await wait_for(lambda: logs.search == "magic" and app.focused is logs, pilot=pilot)
        assert len(logs.view) == 1
        assert "filter: &magic · Esc clears" in str(logs.border_subtitle)
        await pilot.press("escape")
        assert logs.search == "" and len(logs.view) == everything
        assert "Esc clears" not in str(logs.border_subtitle)
        await pilot.press("escape")  # nothing left to clear: nothing happens, nothing breaks
        # A search nothing matches says so, rather than looking like an empty log.
        await pilot.press("ampersand", *"tensor", "enter")
        await wait_for(lambda: logs.search == "tensor", pilot=pilot)
        assert not logs.view
        said = f"no line matches the filter ({everything} lines hidden) · Esc clears"
        await wait_for(lambda: said in screen_text(app), pilot=pilot)


async def test_the_model_filter_is_said_and_cleared_by_escape_too() -> None:
    app = make_app(Config(), demo_fleet(), frozen_time=NOW)
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        table = app.dashboard.model_table
        table.move_cursor(row=table.get_row_index("broken"))
        await pilot.press("g")  # the model's lines
        logs = app.dashboard.logs
        await wait_for(lambda: logs.model == "broken" and app.focused is logs, pilot=pilot)
        assert "filter: model broken · Esc clears" in str(logs.border_subtitle)
        await pilot.press("escape")
        assert logs.model is None and logs.view is logs.buffer


async def test_switching_machines_clears_the_log_search() -> None:
    app = make_app(Config(), demo_fleet(), frozen_time=NOW)
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        logs = app.dashboard.logs
        logs.focus()
        await pilot.press("ampersand", *"magic", "enter")
        await wait_for(lambda: logs.search == "magic" and app.focused is logs, pilot=pilot)  # the prompt closed
        await pilot.press("2")
        await wait_for(lambda: app.dashboard.selected_machine == "gpu-box", pilot=pilot)
        assert logs.search == "" and "filter" not in str(logs.border_subtitle)
        await pilot.press("1")
        await wait_for(lambda: app.dashboard.selected_machine == "workstation", pilot=pilot)
        assert logs.search == "" and len(logs.view) == len(logs.buffer) > 0


async def test_escape_in_the_table_clears_its_filter() -> None:
    app = make_app(Config(), demo_fleet(), frozen_time=NOW)
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        table = app.dashboard.model_table
        await pilot.press("slash", *"qwen", "enter")
        await wait_for(lambda: table.filter_text == "qwen" and app.focused is table, pilot=pilot)
        assert list(table.rows_now) == ["qwen2.5-coder-14b"]
        assert "filter: qwen │ Esc clears │" in str(table.border_subtitle)
        await wait_for(lambda: "filter: qwen │ Esc clears" in screen_text(app), pilot=pilot)
        await pilot.press("escape")
        assert table.filter_text == "" and len(table.rows_now) == 5
        assert "filter" not in str(table.border_subtitle)
        await pilot.press("escape")  # nothing left to clear
        assert len(table.rows_now) == 5
