"""Scrollbar thumbs drawn in whole cells, at least MIN_THUMB of them.

Textual draws a thumb's ends with eighth-cell glyphs for smoothness; a thumb of about one cell (a long log, a table
a little wider than its pane) came out as a lone `▉` or `▎` that read as a stray character. Here a thumb is a run of
whole reversed cells, never shorter than MIN_THUMB (when the track has room for it), placed at the nearest cell.
Textual's documented way to change the look: `ScrollBar.renderer` (use()).
"""

from __future__ import annotations

from rich.color import Color
from rich.segment import Segment, Segments
from rich.style import Style
from textual.scrollbar import ScrollBar, ScrollBarRender

MIN_THUMB = 2
_BACK, _BAR = Color.parse("#555555"), Color.parse("bright_magenta")  # Textual's defaults; the widget passes its own


class WholeCellScrollBarRender(ScrollBarRender):
    @classmethod
    def render_bar(
        cls,
        size: int = 25,
        virtual_size: float = 50,
        window_size: float = 20,
        position: float = 0,
        thickness: int = 1,
        vertical: bool = True,
        back_color: Color = _BACK,
        bar_color: Color = _BAR,
    ) -> Segments:
        blank = cls.BLANK_GLYPH * (thickness if vertical else 1)
        size = int(size)
        if window_size and size and virtual_size and size != virtual_size and virtual_size > window_size:
            thumb = max(min(MIN_THUMB, size), round(window_size * size / virtual_size))
            thumb = min(thumb, size)
            start = round((size - thumb) * min(1.0, max(0.0, position / (virtual_size - window_size))))
            up = Segment(blank, Style(bgcolor=back_color, meta={"@mouse.down": "scroll_up"}))
            down = Segment(blank, Style(bgcolor=back_color, meta={"@mouse.down": "scroll_down"}))
            grab = Segment(blank, Style(color=bar_color, reverse=True, meta={"@mouse.down": "grab"}))
            segments = [up] * start + [grab] * thumb + [down] * (size - start - thumb)
        else:
            segments = [Segment(blank, Style(bgcolor=back_color))] * size
        if vertical:
            return Segments(segments, new_lines=True)
        return Segments([*segments, Segment.line()] * thickness, new_lines=False)


def use() -> None:
    """Every scrollbar of the app drawn so (a class setting of Textual's: call once, before the first paint)."""
    ScrollBar.renderer = WholeCellScrollBarRender
