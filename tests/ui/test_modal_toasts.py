"""Help taller than the screen scrolls in its box, and a toast over a modal never covers its bottom border or the
controls and hint above it (help at 140x45 had one over its "esc closes" line); on the dashboard toasts stay at the
bottom right, over the log's corner."""

from __future__ import annotations

from textual.geometry import Region
from textual.widgets._toast import Toast

from app.ui.screens.help import HelpScreen
from tests.helpers.wait import wait_for
from tests.ui.test_snapshots import build, settle


def bottom_rows(box: Region, n: int) -> Region:
    return Region(box.x, box.bottom - n, box.width, n)


async def test_a_toast_over_help_leaves_its_hint_and_bottom_border_in_view() -> None:
    app = build()
    async with app.run_test(size=(140, 45), notifications=True) as pilot:
        await settle(pilot)
        app.notify("a toast on the dashboard", timeout=60)
        await wait_for(lambda: app.screen.query(Toast), pilot=pilot)
        await pilot.pause(0.1)
        below = app.screen.query_one(Toast).region
        assert below.bottom > 45 // 2  # the dashboard's toasts: at the bottom, as Textual puts them
        await pilot.press("question_mark")
        await wait_for(lambda: isinstance(app.screen, HelpScreen), pilot=pilot)
        app.notify("a toast over help, with a line long enough to take two rows of the toast", timeout=60)
        await wait_for(lambda: app.screen.query(Toast), pilot=pilot)
        await pilot.pause(0.1)
        box = app.screen.query_one("#help-box").region
        hint = app.screen.query_one("#help-hint").region
        assert box.bottom <= 45 and box.height < 45  # taller help scrolls inside its box
        for toast in app.screen.query(Toast):
            assert not toast.region.overlaps(bottom_rows(box, 1)), (toast.region, box)
            assert not toast.region.overlaps(hint), (toast.region, hint)
        table = app.screen.query_one("#help-table")
        assert table.max_scroll_y > 0  # more keys than rows: the table scrolls, with a scrollbar
        assert table.show_vertical_scrollbar
        await pilot.press("pagedown")
        await wait_for(lambda: table.scroll_y > 0, pilot=pilot)
