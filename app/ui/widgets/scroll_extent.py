"""What a scroll view of fixed height scrolls over, set without a layout pass of the whole screen.

Textual's `virtual_size` is a layout reactive: every change lays the whole screen out again (the log panel had 39 in
~45 s of a router's cycle; the model table one per row that came or went and per column that widened). A view whose
height the stylesheet fixes (1fr, a number) does not move anything else when its content grows, so only its
scrollbars need to know. A scrollbar that appears or goes still brings its layout (show_*_scrollbar are layout
reactives), and a view of `height: auto` keeps Textual's way.
"""

from __future__ import annotations

from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.widget import Widget

from app.ui.patches.textual_internals import update_scrollbars


def set_scroll_extent(view: ScrollView, size: Size) -> None:
    if size == view.virtual_size:
        return
    height = view.styles.height
    if height is None or height.is_auto or not view.is_mounted:
        view.virtual_size = size
        return
    view.set_reactive(Widget.virtual_size, size)
    update_scrollbars(view, size)
    # Fewer rows: a view scrolled past its new end comes back to it, as a layout would have clamped it.
    x, y = min(view.scroll_x, view.max_scroll_x), min(view.scroll_y, view.max_scroll_y)
    if (x, y) != (view.scroll_x, view.scroll_y):
        view.scroll_to(x, y, animate=False, immediate=True)
