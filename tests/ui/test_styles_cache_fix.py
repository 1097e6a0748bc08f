"""Removed widgets leave no styles cache behind (Textual's colour cache kept up to 1,024 of them, with their
rendered lines: Textualize/textual#6665), and the colour cache that replaces it holds its bound
(app/ui/patches/textual_internals.py). These fail when an upgrade of Textual makes the bound a no-op, or fixes
the leak (then retire the bound)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable

from textual._styles_cache import StylesCache
from textual.color import Color
from textual.widgets import Static

from app.config import Config
from app.ui.app import make_app
from app.ui.patches.textual_internals import (
    INNER_OUTER_ENTRIES,
    TEXTUAL_GET_INNER_OUTER,
    inner_outer,
    keep_no_dead_styles_caches,
)
from tests.helpers.standin_fleet import demo_fleet
from tests.helpers.wait import wait_for


def test_textuals_own_colour_cache_still_keeps_a_removed_widgets_styles_cache() -> None:
    # Textualize/textual#6665 still open in the pinned Textual: its method, called as a widget's render calls it,
    # keeps that widget's StylesCache alive. Once this fails, the leak is fixed upstream and the bound can go.
    cache = StylesCache()
    TEXTUAL_GET_INNER_OUTER(cache, Color(1, 2, 3), Color(4, 5, 6, 0.5))
    ref = weakref.ref(cache)
    del cache
    gc.collect()
    assert ref() is not None
    TEXTUAL_GET_INNER_OUTER.cache_clear()


def test_the_dashboard_keys_the_colour_cache_by_colours_alone() -> None:
    make_app(Config(), demo_fleet())
    keep_no_dead_styles_caches()  # idempotent
    assert StylesCache.__dict__["get_inner_outer"] is not TEXTUAL_GET_INNER_OUTER
    colours = Color(1, 2, 3), Color(4, 5, 6, 0.5)
    assert StylesCache().get_inner_outer(*colours) == TEXTUAL_GET_INNER_OUTER(StylesCache(), *colours)  # same styles
    TEXTUAL_GET_INNER_OUTER.cache_clear()


def drawn(widgets: list[Static]) -> Callable[[], bool]:
    return lambda: all(w._styles_cache._cache for w in widgets)


async def test_widgets_mounted_drawn_and_removed_leave_no_styles_cache_alive() -> None:
    app = make_app(Config(), demo_fleet())
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.pause(0.3)
        gone: list[weakref.ref[StylesCache]] = []
        for round_ in range(3):
            batch = [Static(f"toast {round_}.{i}", classes="probe") for i in range(20)]
            for i, w in enumerate(batch):
                w.styles.background = Color(10 * round_, i, 50)  # a new colour pair each
            await app.screen.mount_all(batch)
            await wait_for(drawn(batch), pilot=pilot)
            gone += [weakref.ref(w._styles_cache) for w in batch]
            await app.screen.query(".probe").remove()
            del batch, w
        # The screen's last layout still names the widgets it drew: a repaint without them lets them go.
        await app.screen.mount(Static("after", classes="probe"))
        await pilot.pause(0.3)
        gc.collect()
        alive = sum(1 for r in gone if r() is not None)
        assert alive == 0, f"{alive} of {len(gone)} removed widgets' styles caches are still alive"


def test_the_colour_pair_cache_holds_its_bound() -> None:
    inner_outer.cache_clear()
    for i in range(INNER_OUTER_ENTRIES + 200):
        inner, outer = inner_outer(Color(i % 256, i // 256, 0), Color(0, 0, 1, 0.5))
        assert outer.background is not None and inner.background is not None
    assert inner_outer.cache_info().currsize == INNER_OUTER_ENTRIES
