"""Every reach into Textual's internals, each a small function the dashboard calls, so that no other module imports
a private Textual module or touches a private name. Written against textual==8.2.8, pinned in pyproject.toml;
tests/ui/test_textual_internals.py fails when an upgrade removes a name used here, or fixes what a bound here
works around (then retire that bound).

- Styles caches of removed widgets: Textualize/textual#6665 (`StylesCache.get_inner_outer` is an lru_cache on a
  method, so its keys keep up to 1,024 StylesCache objects of removed widgets alive, with their rendered lines).
- Watchers of closed widgets: Textualize/textual#6666 (watchers that `watch()` and `data_bind()` register stay on
  the watched object after their widget is removed, until that reactive changes again).
- The toasts' bound: Textualize/textual#5129 (feature request: a limit on the toasts shown at once). The holder
  Textual leaves behind when its rack drops a stale toast: no upstream issue found (searched Textual's issues for
  a ToastHolder or stale toast left behind).
- The footer keys dimmed in place: `FooterKey` is in a private module, and its private `_disabled` decides what a
  click on it does. No upstream issue found (searched Textual's issues for Footer rebuilding every FooterKey on
  each bindings update, and for a public way to update a FooterKey).
- A scroll view's extent set without a layout pass of the whole screen (widgets/scroll_extent.py): its private
  `_scroll_update` tells the scrollbars. No upstream issue found.
- A partial update drawn only where it changed: `Compositor._get_renders` (see below).
"""

from __future__ import annotations

import contextlib
from functools import lru_cache
from typing import Any

from textual._compositor import Compositor
from textual._styles_cache import StylesCache
from textual._xterm_parser import XTermParser
from textual.app import App, ScreenStackError
from textual.color import Color
from textual.css.query import NoMatches
from textual.dom import DOMNode
from textual.geometry import Region, Size
from textual.notifications import Notification, Notifications
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.style import Style
from textual.widgets import Footer
from textual.widgets._footer import FooterKey
from textual.widgets._toast import ToastRack

# Styles caches of removed widgets (Textualize/textual#6665).
#
# In the soak's router cycle ~780 orphaned caches were held after 3 minutes (tracemalloc: StylesCache +776 while the
# widgets alive stayed at 37): footer keys rebuilt, toasts dismissed. The two styles depend only on the colours, so
# the cache is keyed by them alone: still 1,024 entries at most, none of them a widget's.

INNER_OUTER_ENTRIES = 1024
"""Bound of the colour-pair cache (as Textual's)."""

TEXTUAL_GET_INNER_OUTER: Any = StylesCache.__dict__.get("get_inner_outer")
"""Textual's own method, kept for the test that tells when an upgrade has fixed it."""


@lru_cache(INNER_OUTER_ENTRIES)
def inner_outer(base_background: Color, background: Color) -> tuple[Style, Style]:
    """Inner and outer background styles, as StylesCache.get_inner_outer makes them."""
    return Style(background=base_background + background), Style(background=base_background)


def _get_inner_outer(_self: StylesCache, base_background: Color, background: Color) -> tuple[Style, Style]:
    return inner_outer(base_background, background)


def keep_no_dead_styles_caches() -> None:
    """Key Textual's inner/outer cache by colours only (idempotent); drops the caches the old one held."""
    old = StylesCache.__dict__.get("get_inner_outer")
    if old is not _get_inner_outer:
        if cache_clear := getattr(old, "cache_clear", None):
            cache_clear()
        StylesCache.get_inner_outer = _get_inner_outer  # type: ignore[method-assign,assignment]


# Watchers of closed widgets (Textualize/textual#6666).
#
# The Footer's `compact` is data-bound by each of its keys, and never changes: every footer rebuild (a key becoming
# available or not: every load and unload) left its ~10 FooterKey widgets alive for good, ~27 widgets a router
# cycle. Pruned after each rebuild, so at most one generation of dead keys is ever held.


def prune_closed_watchers(obj: DOMNode) -> int:
    """Drop the watchers of `obj`'s reactives whose widget has closed; returns how many were dropped."""
    watchers: dict[str, list[tuple[DOMNode, object]]] | None = getattr(obj, "__watchers", None)
    if not watchers:
        return 0
    dropped = 0
    for entries in watchers.values():
        alive = [(node, cb) for node, cb in entries if not (node._closing or node._closed)]
        dropped += len(entries) - len(alive)
        entries[:] = alive
    return dropped


# The toasts' bound (Textualize/textual#5129); the policy itself is toast_bound.py.


def live_notifications(app: App[Any]) -> Notifications:
    """The notifications Textual keeps until their timeouts, oldest first."""
    return app._notifications


def drop_notification(app: App[Any], notification: Notification) -> None:
    """Forget `notification` (its toast goes at the next refresh of the toasts) and remove its toast's holder now:
    Textual's rack removes a stale toast but leaves its holder behind for good."""
    app._unnotify(notification, refresh=False)
    with contextlib.suppress(NoMatches, ScreenStackError):
        app.screen.get_child_by_type(ToastRack).get_child_by_id(ToastRack._toast_id(notification)).remove()


# Footer keys dimmed in place (no upstream issue found).


def footer_keys(footer: Footer) -> list[FooterKey]:
    """The key widgets `footer` has mounted."""
    return list(footer.query(FooterKey))


def set_key_disabled(key: FooterKey, disabled: bool) -> None:
    """What a click on `key` does: a bell when disabled, the key's action when not (the look is the caller's)."""
    key._disabled = disabled


# A scroll view's extent without a layout pass (no upstream issue found: searched Textual's issues for
# virtual_size as a layout reactive and for updating scrollbars alone).


def update_scrollbars(view: ScrollView, size: Size) -> None:
    """Tell `view`'s scrollbars its new virtual size, which `set_reactive` set without the layout its watcher does."""
    view._scroll_update(size)


# A partial update drawn only where it changed (no upstream issue found: searched Textual's issues for
# _get_renders, partial update and render_lines of the whole widget).
#
# For a partial update Textual's compositor asks every widget whose *container's* clip overlaps the changed region
# for all the lines of the widget, and then keeps only the changed lines. One changed row of the model table (a
# download's progress, twice a second) drew every widget of the dashboard in full: the log panel's 19 lines, the
# machines pane's 29, the screen's 50 (bench/pull_cost.py; 100 row updates in App.run_test: every one of 10 widgets
# was asked for its whole height). Here a widget that does not overlap the changed region is not asked, and one that
# does is asked for the changed rows only, across its whole visible width: the compositor cuts each line at the
# widgets' edges, so a line of a widget is drawn whole, as before, and the lines drawn are the lines kept.

TEXTUAL_GET_RENDERS: Any = Compositor.__dict__.get("_get_renders")
"""Textual's own method, kept for the test that compares the two."""


def _get_renders(self: Compositor, crop: Region | None = None) -> Any:
    if not crop:
        yield from TEXTUAL_GET_RENDERS(self, crop)
        return
    rows = Region(0, crop.y, self.size.width, crop.height)
    intersection = Region.intersection
    for widget, (region, clip) in self.visible_widgets.items():
        shown = intersection(region, clip)
        if not crop.overlaps(shown):
            continue
        x, y, width, height = intersection(shown, rows)
        lines: list[Strip] = widget.render_lines(Region(x - region.x, y - region.y, width, height))
        yield region, intersection(clip, rows), lines


def draw_only_what_changed() -> None:
    """Partial updates ask the widgets for the changed rows only (idempotent)."""
    Compositor._get_renders = _get_renders  # type: ignore[method-assign]


# The xterm input parser of Textual's own drivers (private), for app/web/session_driver.py: a browser tab's keys
# parsed in the serve process, as Textual's WebDriver parses them in a process of its own. tests/ui/
# test_serve_browser.py fails (a key pressed in the page loads a model) if an upgrade moves or changes it.
TabInputParser = XTermParser
