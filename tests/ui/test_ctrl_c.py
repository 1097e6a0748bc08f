"""Ctrl+C quits the dashboard like `q` (issue 38, case 6); it used to add a toast of raw markup per press."""

from __future__ import annotations

from textual.widgets import Input

from app.config import Config
from app.ui.app import make_app
from tests.helpers.screen import record_notifications
from tests.helpers.standin_fleet import NOW, demo_fleet
from tests.helpers.wait import wait_for


async def test_ctrl_c_quits_like_q_without_a_toast() -> None:
    app = make_app(Config(), demo_fleet(), frozen_time=NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(lambda: len(app.dashboard.model_table.rows_now) == 5, pilot=pilot)
        toasts = record_notifications(app)
        await pilot.press("ctrl+c")
        await wait_for(lambda: app._exit, what="the app exiting")
        assert toasts == []


async def test_ctrl_c_on_selected_text_in_the_prompt_copies_and_does_not_quit() -> None:
    """Textual's Input copies on ctrl+c when text is selected, and passes it on (so it quits) when none is."""
    app = make_app(Config(), demo_fleet(), frozen_time=NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(lambda: len(app.dashboard.model_table.rows_now) == 5, pilot=pilot)
        await pilot.press("slash")
        await wait_for(lambda: isinstance(app.focused, Input), pilot=pilot, what="the filter prompt")
        await pilot.press("l", "l", "shift+home", "ctrl+c")
        await pilot.pause()
        assert not app._exit
        assert app.clipboard == "ll"
        await pilot.press("escape", "ctrl+c")
        await wait_for(lambda: app._exit, what="the app exiting")
