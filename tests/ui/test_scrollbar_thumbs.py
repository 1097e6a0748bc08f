"""Scrollbar thumbs are whole cells, at least two, never the eighth-block glyphs that read as stray characters."""

from __future__ import annotations

from textual.scrollbar import ScrollBar, ScrollBarRender

from app.ui.widgets.whole_cell_scrollbar import MIN_THUMB, WholeCellScrollBarRender, use
from tests.helpers.screen import screen_text
from tests.ui.test_log_panel import PanelApp, lines

EIGHTHS = set("▁▂▃▄▅▆▇▉▊▋▌▍▎▏")


def thumb_cells(size: int, virtual: int, window: int, position: float, vertical: bool) -> list[int]:
    bar = WholeCellScrollBarRender.render_bar(size, virtual, window, position, 1, vertical)
    cells = [s for s in bar.segments if s.text not in ("\n", "")]
    assert all(not (set(s.text) & EIGHTHS) for s in cells)
    return [k for k, s in enumerate(cells) if s.style and s.style.meta.get("@mouse.down") == "grab"]


def test_a_long_content_gets_a_thumb_of_two_whole_cells_from_top_to_bottom() -> None:
    for vertical in (True, False):
        assert thumb_cells(20, 100_000, 20, 0, vertical) == [0, 1]
        assert thumb_cells(20, 100_000, 20, 100_000 - 20, vertical) == [18, 19]
        assert len(thumb_cells(20, 100_000, 20, 50_000, vertical)) == MIN_THUMB
        assert thumb_cells(20, 21, 20, 0, vertical) == list(range(19))  # nearly fits: nearly the whole track
        assert thumb_cells(20, 20, 20, 0, vertical) == []  # fits: no thumb


async def test_the_log_panel_over_100k_lines_shows_no_eighth_block() -> None:
    """Scrolled a third of the way up 100,000 lines: Textual's own thumb is a lone eighth-block glyph there."""
    before = ScrollBar.renderer
    app = PanelApp(max_lines=100_000)
    try:
        ScrollBar.renderer = ScrollBarRender
        async with app.run_test(size=(100, 20)) as pilot:
            panel = app.panel
            panel.set_source("m", lines(0, 100_000))
            await pilot.pause(0.3)
            panel.following = False
            panel.scroll_to(y=33_333, animate=False, immediate=True)
            await pilot.pause(0.1)
            assert set(screen_text(app)) & EIGHTHS  # what was seen: a stray-looking glyph
            use()
            panel.vertical_scrollbar.refresh()
            await pilot.pause(0.1)
            assert not set(screen_text(app)) & EIGHTHS
    finally:
        ScrollBar.renderer = before
