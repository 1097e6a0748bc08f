"""The log panel alone, on the Line API: bounded scrollback, only visible rows rendered, skip markers, filters."""

from __future__ import annotations

from collections.abc import Callable

from textual.app import App, ComposeResult

from app.services.core.log_lines import LogLine
from app.services.logs.parse import LogAttributor, skipped_marker
from app.ui.dashboard.log_panel import RENDERED_ROWS, LogPanel
from app.ui.text.glyphs import UNICODE
from tests.helpers.screen import screen_text
from tests.helpers.wait import wait_for


class PanelApp(App[None]):
    def __init__(self, max_lines: int) -> None:
        super().__init__()
        self.max_lines = max_lines

    def compose(self) -> ComposeResult:
        yield LogPanel(UNICODE, self.max_lines, id="logs")

    @property
    def panel(self) -> LogPanel:
        return self.query_one(LogPanel)


def lines(start: int, n: int, att: LogAttributor | None = None) -> list[LogLine]:
    att = att or LogAttributor()
    att.ports.setdefault(41000, "alpha")
    out = []
    for i in range(start, start + n):
        prefix = "[41000] " if i % 10 == 0 else ""
        level = "E" if i % 1000 == 999 else "I"
        out.append(att.parse(f"{prefix}0.00.{i % 1000:03d}.000 {level} srv  update_slots: line {i:07d}"))
    return out


async def test_scrollback_is_bounded_and_rows_are_rendered_only_when_on_screen() -> None:
    app = PanelApp(max_lines=100_000)
    async with app.run_test(size=(100, 20)) as pilot:
        panel = app.panel
        panel.set_source("m", [])
        for start in range(0, 120_000, 20_000):  # past the bound
            panel.append(lines(start, 20_000))
        await wait_for(lambda: "line 0119999" in screen_text(app), pilot=pilot)
        assert len(panel.buffer) == 100_000  # the bound beside LogPanel.buffer
        assert panel.buffer[0].text.endswith("line 0020000")
        assert len(panel._rows) <= 3 * panel.size.height  # the rows of the frames painted: never the 100,000
        panel.focus()
        for _ in range(30):
            await pilot.press("pageup")
        await pilot.pause()
        assert not panel.following
        assert len(panel._rows) <= RENDERED_ROWS
        shown = screen_text(app)
        assert "line 0119999" not in shown, shown
        assert "paused" in str(panel.border_subtitle)
        await pilot.press("end")
        assert panel.following


async def test_search_and_filters_across_100k_lines() -> None:
    app = PanelApp(max_lines=100_000)
    async with app.run_test(size=(100, 20)) as pilot:
        panel = app.panel
        panel.set_source("m", lines(0, 100_000))
        panel.set_search("line 0054321")
        await pilot.pause()
        assert [ln.text for ln in panel.view] == ["srv  update_slots: line 0054321"]
        assert "line 0054321" in screen_text(app)
        panel.set_search("")
        panel.action_cycle_level()
        panel.action_cycle_level()  # errors only
        assert panel.line_count == 100 and all(ln.level == "E" for ln in panel.view)
        panel.action_cycle_level()
        panel.current_model = "alpha"
        panel.action_toggle_model()
        assert panel.line_count == 10_000 and {ln.model for ln in panel.view} == {"alpha"}
        # New lines land in the filtered view as they come.
        panel.append(lines(100_000, 100))
        assert panel.line_count == 10_000 and panel.view[-1].text.endswith("line 0100090")


async def test_skipped_lines_are_said_whatever_the_filter() -> None:
    app = PanelApp(max_lines=1_000)
    async with app.run_test(size=(100, 20)) as pilot:
        panel = app.panel
        panel.set_source("m", lines(0, 10))
        panel.current_model = "alpha"
        panel.action_toggle_model()
        panel.append([skipped_marker(83_412), *lines(10, 10)])
        await wait_for(lambda: "83,412 lines skipped" in screen_text(app), pilot=pilot)
        await wait_for(lambda: "83,412 skipped" in str(panel.border_subtitle), pilot=pilot)
        assert panel.view[-1].text.endswith("line 0000010")


async def test_a_paused_panel_counts_and_keeps_its_rows_while_old_lines_leave() -> None:
    app = PanelApp(max_lines=1_000)
    async with app.run_test(size=(100, 12)) as pilot:
        panel = app.panel
        panel.set_source("m", lines(0, 1_000))
        await pilot.pause()
        panel.focus()
        await pilot.press("pageup", "pageup")
        assert not panel.following
        top = panel.view[panel.scroll_offset.y].text
        panel.append(lines(1_000, 300))  # 300 old lines leave the scrollback
        await pilot.pause(0.3)
        assert panel.view[panel.scroll_offset.y].text == top
        assert panel.unseen == 300 and "paused, 300 new lines" in str(panel.border_subtitle)


def shows(app: PanelApp, text: str) -> Callable[[], bool]:
    return lambda: text in screen_text(app)


async def test_new_lines_move_the_scrollbar_without_a_layout_of_the_screen() -> None:
    app = PanelApp(max_lines=1000)
    async with app.run_test(size=(100, 20)) as pilot:
        panel = app.panel
        panel.set_source("m", lines(0, 50))
        await wait_for(lambda: "line 0000049" in screen_text(app), pilot=pilot)
        layouts: list[bool] = []
        real_refresh = panel.refresh

        def counting(*regions: object, **kw: bool) -> object:
            layouts.append(bool(kw.get("layout")))
            return real_refresh(*regions, **kw)  # type: ignore[arg-type]

        panel.refresh = counting  # type: ignore[method-assign,assignment]
        for start in range(50, 250, 50):
            panel.append(lines(start, 50))
            await wait_for(shows(app, f"line {start + 49:07d}"), pilot=pilot)
        assert layouts and not any(layouts)  # painted, never laid out again
        assert panel.virtual_size.height == 250
        assert panel.following and panel.scroll_y == panel.max_scroll_y
        assert panel.vertical_scrollbar.window_virtual_size == 250  # the scrollbar knows the new length
