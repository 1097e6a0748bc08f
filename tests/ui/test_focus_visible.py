"""The focused pane is unmistakable: Tab moves a heavy accent border and a title in reverse from pane to pane, in
the default look and with [ui] ascii (where the border stays ASCII and the colour and title say it)."""

from __future__ import annotations

import pytest
from textual.widget import Widget

from tests.helpers.screen import screen_text
from tests.ui.test_snapshots import build, settle


def look(w: Widget) -> tuple[object, ...]:
    s = w.styles
    return (s.border_top, s.border_title_color, s.border_title_background, s.border_title_style)


@pytest.mark.parametrize(
    ("ascii_mode", "theme"),
    [(False, None), (True, None), (False, "textual-light"), (False, "monokai")],
    ids=["unicode", "ascii", "light-theme", "monokai"],
)
async def test_tab_moves_a_border_that_differs_from_every_unfocused_pane(ascii_mode: bool, theme: str | None) -> None:
    app = build(ascii_mode=ascii_mode)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        if theme:
            app.theme = theme
            await pilot.pause()
        dash = app.dashboard
        panes: list[Widget] = [dash.machines, dash.model_table, dash.logs]
        seen: set[str] = set()
        for _ in range(len(panes)):
            await pilot.press("tab")
            await pilot.pause()
            focused = app.focused
            assert focused in panes, focused
            seen.add(str(focused.id))
            others = [p for p in panes if p is not focused]
            assert all(look(focused) != look(p) for p in others)
            kind, colour = focused.styles.border_top
            assert all(colour != p.styles.border_top[1] for p in others)
            assert kind == ("ascii" if ascii_mode else "heavy")
            assert all(p.styles.border_top[0] == ("ascii" if ascii_mode else "round") for p in others)
            assert focused.styles.border_title_background != others[0].styles.border_title_background
        assert len(seen) == len(panes)  # Tab went through every pane
        if not ascii_mode:
            assert "┏" in screen_text(app) and screen_text(app).count("┏") == 1  # one heavy border on screen
