"""Followed log lines no longer fill Rich's width cache (4,096 entries keyed by every text measured: ~1.2 MB of
text the scrollback already keeps), and every width is still the one Rich gives (app/ui/patches/rich_internals.py).
These fail when an upgrade of Rich or Textual makes the fix a no-op, or no longer needed."""

from __future__ import annotations

import rich.cells
import rich.segment
import textual._compositor
import textual.content
from textual.strip import Strip

from app.config import Config
from app.ui.app import make_app
from app.ui.patches.rich_internals import _RICH_CACHED, cell_len_ascii_uncached, measure_ascii_uncached
from tests.helpers.screen import screen_text
from tests.helpers.standin_fleet import demo_fleet
from tests.helpers.wait import wait_for
from tests.ui.test_log_panel import PanelApp, lines

SHAPES = [
    "",
    "plain ascii line 0000123",
    "tab\there",
    "bell\x07 and del\x7f",
    "\x1b[31mred\x1b[0m",
    "wide 模型 characters",
    "emoji 🦙 and a flag 🇫🇷",
    "combining e\u0301 accent",
    "zero\u200bwidth",
    "␊ visible newline",
    "x" * 600,
    "模" * 600,
]


def test_every_width_is_the_one_rich_gives() -> None:
    for text in SHAPES:
        assert cell_len_ascii_uncached(text) == _RICH_CACHED(text), repr(text)
        assert Strip.from_lines([[rich.segment.Segment(text)]])[0].cell_length == _RICH_CACHED(text), repr(text)


def test_rich_still_caches_every_text_it_measures() -> None:
    # What the fix is for: were Rich to stop keeping printable ASCII in its cache (or the cache to go), retire it.
    assert _RICH_CACHED.cache_info().maxsize == 4096
    _RICH_CACHED.cache_clear()
    _RICH_CACHED("a followed log line 0000123")
    assert _RICH_CACHED.cache_info().currsize == 1


def test_the_dashboard_puts_it_in_place_of_every_name_rich_and_textual_bound() -> None:
    make_app(Config(), demo_fleet())
    for module in (rich.cells, rich.segment):
        assert module.cached_cell_len is cell_len_ascii_uncached, module.__name__
    for module in (textual._compositor, textual.content):
        assert module.cell_len is cell_len_ascii_uncached, module.__name__
    assert measure_ascii_uncached() == 0  # idempotent: nothing left to replace


async def test_followed_lines_past_the_caches_bound_leave_it_as_it_was() -> None:
    measure_ascii_uncached()
    app = PanelApp(max_lines=10_000)
    async with app.run_test(size=(100, 20)) as pilot:
        panel = app.panel
        panel.set_source("m", [])
        await pilot.pause()
        before = _RICH_CACHED.cache_info().currsize
        for start in range(0, 6_000, 150):  # 6,000 new texts, each painted: past the cache's 4,096
            panel.append(lines(start, 150))
            last = f"line {start + 149:07d}"
            await wait_for(lambda last=last: last in screen_text(app), pilot=pilot)  # type: ignore[misc]
        grew = _RICH_CACHED.cache_info().currsize - before
        assert grew < 50, f"Rich's width cache took {grew} entries for 6,000 followed lines"
