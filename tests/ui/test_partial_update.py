"""A partial update drawn only where it changed (app/ui/patches/textual_internals.py, draw_only_what_changed): the
same bytes reach the terminal as with Textual's own `Compositor._get_renders`, while the widgets are asked for the
changed rows only, and a widget away from the change is not asked at all. Fails when an upgrade of Textual renames
what the patch replaces, or changes what a partial update writes."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from rich.console import Console
from rich.segment import Segment
from textual._compositor import Compositor
from textual.app import App, ComposeResult
from textual.containers import Horizontal, Vertical
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

from app.ui.patches import textual_internals
from app.ui.patches.textual_internals import TEXTUAL_GET_RENDERS, draw_only_what_changed

asked: Counter[str] = Counter()
asked_any: Counter[str] = Counter()
"""Every widget asked for lines (containers and the screen too), by type."""
TEXTUAL_RENDER_LINES = Widget.render_lines


def _counted_render_lines(self: Widget, crop: Region) -> list[Strip]:
    asked_any[type(self).__name__] += 1
    return TEXTUAL_RENDER_LINES(self, crop)


class Lines(Widget):
    DEFAULT_CSS = "Lines { width: 1fr; height: 1fr; border: round $accent; }"

    def __init__(self, name: str) -> None:
        super().__init__(id=name)
        self.generation = 0

    def render_lines(self, crop: Region) -> list[Strip]:
        asked[self.id or ""] += crop.height
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        text = f"{self.id} line {y} generation {self.generation}"
        return Strip([Segment(text.ljust(self.size.width)[: self.size.width])])


class Panes(App[None]):
    CSS = "Horizontal { height: 2fr; } Vertical { width: 2fr; }"

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield Lines("left")
            with Vertical():
                yield Lines("top")
                yield Lines("bottom")
        yield Lines("below")


def _update(app: Panes, renders: Any) -> tuple[str, Counter[str], Counter[str]]:
    """What a partial update of one changed line of `top` writes, drawn with `renders`; who was asked for lines."""
    compositor = app.screen._compositor
    top = app.query_one("#top", Lines)
    top.generation += 1
    top.refresh(Region(0, 2, top.size.width, 1))
    compositor.update_widgets({top})
    asked.clear()
    asked_any.clear()
    Compositor._get_renders = renders  # type: ignore[method-assign]
    Widget.render_lines = _counted_render_lines  # type: ignore[method-assign]
    try:
        update = compositor.render_partial_update()
    finally:
        Widget.render_lines = TEXTUAL_RENDER_LINES  # type: ignore[method-assign]
    assert update is not None
    console = Console(width=app.size.width, force_terminal=True, color_system="truecolor", legacy_windows=False)
    return update.render_segments(console), Counter(asked), Counter(asked_any)


@pytest.mark.parametrize("size", [(100, 30), (61, 17)])
async def test_a_changed_line_writes_the_same_and_asks_only_for_it(size: tuple[int, int]) -> None:
    app = Panes()
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        try:
            theirs, asked_theirs, any_theirs = _update(app, TEXTUAL_GET_RENDERS)
            app.query_one("#top", Lines).generation -= 1  # the same change drawn again, the patched way
            draw_only_what_changed()
            ours, asked_ours, any_ours = _update(app, textual_internals._get_renders)
        finally:
            Compositor._get_renders = TEXTUAL_GET_RENDERS  # type: ignore[method-assign]
            draw_only_what_changed()
    assert "top line 2 generation 1" in ours
    assert ours == theirs
    # Textual asks each widget for all of its lines, ours for the changed one, and nothing of widgets beside it
    assert asked_theirs["top"] > 1 and asked_theirs["below"] > 1 and asked_theirs["left"] > 1
    assert asked_ours == Counter({"top": 1})
    # and nothing behind it: Textual asks its container and the screen too, for lines that `top` covers
    assert any_theirs["Vertical"] and any_theirs["Screen"]
    assert any_ours == Counter({"Lines": 1})
