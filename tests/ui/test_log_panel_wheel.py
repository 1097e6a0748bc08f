"""The mouse wheel on the log panel: up pauses the log, and each notch scrolls as far as Textual's own step, either
way (the panel adds the pause in the public `on_mouse_scroll_up`; Textual's handler, called after it, scrolls)."""

from __future__ import annotations

from textual import events

from app.ui.dashboard.log_panel import LogPanel
from tests.helpers.wait import wait_for
from tests.ui.test_log_panel import PanelApp, lines


def wheel(panel: LogPanel, up: bool) -> None:
    kind = events.MouseScrollUp if up else events.MouseScrollDown
    panel.post_message(kind(panel, 5, 5, 0, -1 if up else 1, 0, False, False, False))


async def test_the_wheel_up_pauses_the_log_and_a_notch_is_textuals_step_either_way() -> None:
    app = PanelApp(max_lines=10_000)
    async with app.run_test(size=(100, 20)) as pilot:
        panel = app.panel
        panel.set_source("m", [])
        panel.append(lines(0, 500))
        await wait_for(lambda: panel.max_scroll_y > 0 and panel.scroll_y == panel.max_scroll_y, pilot=pilot)
        end, step = panel.scroll_y, app.scroll_sensitivity_y
        assert panel.following
        wheel(panel, up=True)
        await wait_for(lambda: panel.scroll_y != end, pilot=pilot)
        await pilot.pause()
        assert not panel.following
        assert panel.scroll_y == end - step
        wheel(panel, up=False)
        await wait_for(lambda: panel.scroll_y == end, pilot=pilot)
