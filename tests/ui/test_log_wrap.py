"""`W` in the log panel: long lines wrapped onto the rows below, so a whole reason reads on screen, with no
horizontal scrollbar; followed, filtered and found as when cut; `W` again cuts them."""

from __future__ import annotations

from app.services.logs.parse import LogAttributor
from app.ui.widgets.wrapped_rows import WrappedRows
from tests.helpers.screen import screen_text
from tests.helpers.wait import wait_for
from tests.ui.test_log_panel import PanelApp, lines

TAIL = "the whole reason ends HERE"


def long_lines(start: int, n: int) -> list:  # type: ignore[type-arg]
    att = LogAttributor()
    reason = " ".join(f"word{k:03d}" for k in range(40))  # ~320 characters: three rows and more at 100 columns
    return [
        att.parse(f"0.00.000.000 E srv  load: failed {i:04d}: {reason} {TAIL} {i:04d}") for i in range(start, start + n)
    ]


async def test_wrap_shows_the_whole_of_a_long_line_and_drops_the_horizontal_scrollbar() -> None:
    app = PanelApp(max_lines=1_000)
    async with app.run_test(size=(100, 20)) as pilot:
        panel = app.panel
        panel.set_source("m", [*lines(0, 50), *long_lines(0, 3)])
        await pilot.pause()
        assert f"{TAIL} 0002" not in screen_text(app)  # cut at the edge
        assert panel.show_horizontal_scrollbar
        panel.focus()
        await pilot.press("W")
        await wait_for(lambda: f"{TAIL} 0002" in screen_text(app), pilot=pilot)
        assert panel.wrap and "wrapped" in str(panel.border_subtitle)
        assert not panel.show_horizontal_scrollbar and panel.scroll_x == 0
        width = panel.scrollable_content_region.width
        assert panel.virtual_size.height == panel._wrapped.total > 53  # the long lines take several rows
        assert all(len(row.rstrip()) <= 100 for row in screen_text(app).splitlines())
        # Followed while wrapped: a new long line is at the bottom, whole.
        panel.append(long_lines(3, 1))
        await wait_for(lambda: f"{TAIL} 0003" in screen_text(app), pilot=pilot)
        assert panel.following and panel.scroll_y == panel.max_scroll_y
        assert panel._wrapped.width == width
        await pilot.press("W")
        await wait_for(lambda: f"{TAIL} 0003" not in screen_text(app), pilot=pilot)
        assert not panel.wrap and panel.virtual_size.height == 54


async def test_wrapped_rows_follow_a_full_scrollback_and_a_filter() -> None:
    app = PanelApp(max_lines=200)
    async with app.run_test(size=(100, 20)) as pilot:
        panel = app.panel
        panel.set_source("m", lines(0, 200))
        panel.action_toggle_wrap()
        await pilot.pause()
        assert panel.line_count == 200  # short lines: a row each
        for start in range(0, 400, 100):  # the oldest leave as the long ones come
            panel.append(long_lines(start, 100))
        fresh = WrappedRows()
        fresh.reset(panel._wrapped.width, panel._wrapped.indent, [len(ln.text) + 13 for ln in panel.view])
        assert panel.line_count == fresh.total == panel._wrapped.total  # counted as they came = counted afresh
        panel.set_search("failed 0399")
        await wait_for(lambda: f"{TAIL} 0399" in screen_text(app), pilot=pilot)
        assert len(panel.view) == 1 and panel.line_count > 1


async def test_a_find_in_wrapped_lines_scrolls_to_the_rows_of_its_match() -> None:
    app = PanelApp(max_lines=2_000)
    async with app.run_test(size=(100, 20)) as pilot:
        panel = app.panel
        panel.set_source("m", long_lines(0, 1_000))
        panel.action_toggle_wrap()
        await pilot.pause()
        panel.set_find("failed 0100:")
        await wait_for(lambda: f"{TAIL} 0100" in screen_text(app), pilot=pilot)
        assert panel.found == (1, 1)
        assert panel.copied_text(False).endswith(f"{TAIL} 0100")


def test_wrapped_rows_drop_and_locate() -> None:
    rows = WrappedRows()
    rows.reset(40, 13, [10, 40, 41, 94, 95])  # 1, 1, 2 (40 + 1 on 27), 3 (40 + 27 + 27), 4 rows
    assert rows.total == 11 and [rows.start(i) for i in range(5)] == [0, 1, 2, 4, 7]
    assert rows.locate(5) == (3, 1) and rows.locate(11) == (5, 0)
    assert rows.drop(2) == 2 and rows.total == 9 and rows.locate(0) == (0, 0) and rows.locate(2) == (1, 0)
    rows.extend([5])
    assert rows.total == 10 and rows.locate(9) == (3, 0)


async def test_wrapping_a_long_scrollback_counts_the_rows_of_packed_lines_it_does_not_unpack() -> None:
    app = PanelApp(max_lines=10_000)
    async with app.run_test(size=(100, 20)) as pilot:
        panel = app.panel
        mixed = [*lines(0, 3_000), *long_lines(0, 5), *lines(3_000, 3_000), *long_lines(5, 5), *lines(6_000, 100)]
        panel.set_source("m", mixed)
        passed_over = sum(ln is None for ln in panel.buffer.unless_within(100 - 13))
        assert 5_000 < passed_over < len(mixed) - 10  # chunks of short lines only, not unpacked; the rest read
        panel.action_toggle_wrap()
        await pilot.pause()
        fresh = WrappedRows()
        fresh.reset(panel._wrapped.width, panel._wrapped.indent, [len(ln.text) + 13 for ln in mixed])
        assert panel.line_count == fresh.total > len(mixed)
        panel.action_scroll_home()
        panel.set_find("failed 0007:")
        await wait_for(lambda: f"{TAIL} 0007" in screen_text(app), pilot=pilot)


def test_wrapped_rows_let_go_of_the_dropped_and_still_count_right() -> None:
    widths = [(i * 37) % 200 for i in range(20_000)]
    rows = WrappedRows()
    rows.reset(80, 13, widths[:5_000])
    for k in range(5_000, 20_000, 500):  # the view keeps 5,000 lines while 500 come and 500 go
        rows.extend(widths[k : k + 500])
        rows.drop(500)
    assert len(rows._ends) < 15_000  # compacted on the way: not every dropped line is still held
    fresh = WrappedRows()
    fresh.reset(80, 13, widths[15_000:])
    assert len(rows) == len(fresh) == 5_000 and rows.total == fresh.total
    assert [rows.locate(r) for r in range(0, fresh.total, 97)] == [fresh.locate(r) for r in range(0, fresh.total, 97)]
