"""Help wraps, never cuts: at 80 columns descriptions ended mid-word ("(asks"), at 140 "where" read "everywher"."""

from __future__ import annotations

import re

import pytest
from textual.widgets import DataTable

from app.config import Config
from app.ui.app import make_app
from app.ui.screens.help import HelpScreen
from tests.helpers.screen import screen_text
from tests.helpers.standin_fleet import NOW, demo_fleet
from tests.helpers.wait import wait_for


@pytest.mark.parametrize("size", [(80, 24), (100, 30), (140, 40)], ids=["80x24", "100x30", "140x40"])
async def test_help_shows_every_word_of_every_row(size: tuple[int, int]) -> None:
    app = make_app(Config(), demo_fleet(), frozen_time=NOW)
    async with app.run_test(size=size) as pilot:
        await pilot.press("question_mark")
        await wait_for(lambda: isinstance(app.screen, HelpScreen), pilot=pilot)
        screen = app.screen
        assert isinstance(screen, HelpScreen)
        table = screen.query_one("#help-table", DataTable)
        await wait_for(lambda: table.row_count == len(screen.rows) and table.size.width > 0, pilot=pilot)
        await pilot.pause(0.1)
        assert table.virtual_size.width <= table.scrollable_content_region.width  # nothing is off to the right
        # Page through the whole table and read what is on the screen.
        seen: list[str] = []
        for _ in range(40):
            seen.append(screen_text(app))
            if table.scroll_offset.y >= table.max_scroll_y:
                break
            table.scroll_to(y=table.scroll_offset.y + table.scrollable_content_region.height - 1, animate=False)
            await pilot.pause(0.05)
        words_on_screen = set(re.findall(r"\S+", "\n".join(seen)))
        for row in screen.rows:
            for word in f"{row.description} {row.where} {row.id}".split():
                assert word in words_on_screen, (word, row)
