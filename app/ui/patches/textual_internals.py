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
- A Rich Text's own style read as Rich reads it: `Content.from_rich_text` (see below).
- An Input's value set without a layout of the whole screen: `Input._watch_value` (see below).
- A Log's lines added without its virtual size (widgets/reply_log.py): `Log._lines`, `_width`, `_process_line`,
  `_prune_max_lines` and `textual._line_split` (see below).
"""

from __future__ import annotations

import contextlib
from functools import lru_cache
from typing import Any

from rich.cells import cell_len
from rich.style import Style as RichStyle
from rich.text import Text
from textual._compositor import Compositor
from textual._line_split import line_split
from textual._styles_cache import StylesCache
from textual._xterm_parser import XTermParser
from textual.app import App, ScreenStackError
from textual.color import Color
from textual.content import Content
from textual.css.query import NoMatches
from textual.dom import DOMNode
from textual.geometry import Region, Size
from textual.notifications import Notification, Notifications
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.style import Style
from textual.widget import Widget
from textual.widgets import Footer, Input, Log
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
# widgets' edges, so a line of a widget is drawn whole, as before, and the lines drawn are the lines kept. A widget
# whose part of the changed region lies wholly behind one widget drawn in front of it is not asked either: there the
# compositor keeps the front one's cells, and the update writes only the changed region. The model table's
# containers and the screen were 5 of the 6 widgets asked for each figure of a download (docs/performance.md,
# "Added on 2026-12-08").

TEXTUAL_GET_RENDERS: Any = Compositor.__dict__.get("_get_renders")
"""Textual's own method, kept for the test that compares the two."""


def _get_renders(self: Compositor, crop: Region | None = None) -> Any:
    if not crop:
        yield from TEXTUAL_GET_RENDERS(self, crop)
        return
    rows = Region(0, crop.y, self.size.width, crop.height)
    intersection = Region.intersection
    drawn: list[Region] = []
    for widget, (region, clip) in self.visible_widgets.items():  # front to back: the first drawn at a place wins
        shown = intersection(region, clip)
        if not crop.overlaps(shown):
            continue
        part = intersection(shown, rows)
        changed = intersection(part, crop)
        if any(front.contains_region(changed) for front in drawn):
            continue  # where it changed, wholly behind one drawn in front of it: the screen behind a table's row
        x, y, width, height = part
        lines: list[Strip] = widget.render_lines(Region(x - region.x, y - region.y, width, height))
        drawn.append(part)
        yield region, intersection(clip, rows), lines


def draw_only_what_changed() -> None:
    """Partial updates ask the widgets for the changed rows only (idempotent)."""
    Compositor._get_renders = _get_renders  # type: ignore[method-assign]


# A Rich Text's own style read as Rich reads it (no upstream issue found: searched Textual's issues for
# from_rich_text and a Text's style string).
#
# Content.from_rich_text converts a Text's spans with Rich's parser, but keeps the Text's own style as a string,
# which Textual's CSS parser reads later, at every render. Rich's colour names are not all CSS names: "bright_black"
# (format.DIM) failed to parse (1-6 ms each time, a difflib suggestion for the error), and the text was drawn in
# the plain foreground; "red" and "green" are CSS colours there (#ff0000, #008000), not the ANSI palette's that the
# same words give in the tables. Here the Text's style goes through Rich's parser as its spans do.

TEXTUAL_FROM_RICH_TEXT: Any = Content.__dict__["from_rich_text"].__func__
"""Textual's own classmethod's function, kept for the test that tells when an upgrade fixes it."""


def _from_rich_text(cls: type[Content], text: str | Text, console: Any = None) -> Content:
    if isinstance(text, Text) and isinstance(text.style, str) and text.style:
        with contextlib.suppress(Exception):  # not Rich's either: left to Textual, as before
            style = console.get_style(text.style) if console is not None else RichStyle.parse(text.style)
            text = text.copy()
            text.style = style
    content: Content = TEXTUAL_FROM_RICH_TEXT(cls, text, console)
    return content


def read_text_styles_as_rich() -> None:
    """A Rich Text's own style string parsed by Rich, as its spans are (idempotent)."""
    Content.from_rich_text = classmethod(_from_rich_text)  # type: ignore[method-assign,assignment]


# A Log's lines added without its virtual size (no upstream issue found: searched Textual's issues for Log.write and
# layout).
#
# Log.write sets `virtual_size`, a layout reactive, whenever a line is added or the widest one widens: a streamed
# reply, a few characters a piece, laid the whole ask pane out again for most pieces (69 of 150 refreshes in 20
# answers of bench/ask_first_token.py were layouts). This is Log.write's bookkeeping without that assignment; the
# caller sets the extent (widgets/scroll_extent.py).


def append_to_log(log: Log, data: str) -> Size:
    """`data` added to `log` as Log.write adds it (lines, widest line, the rows to draw again, the max_lines bound),
    without a layout: returns the virtual size the log now needs."""
    lines: list[str] = log._lines
    if data:
        if not lines:
            lines.append("")
        for line, ending in line_split(data):
            lines[-1] += line
            log._width = max(log._width, cell_len(log._process_line(lines[-1])))
            log.refresh_lines(len(lines) - 1)
            if ending:
                lines.append("")
    if log.max_lines is not None and len(lines) > log.max_lines:
        log._prune_max_lines()
    return Size(log._width, log.line_count)


# An Input's value set without a layout of the whole screen (no upstream issue found: searched Textual's issues for
# Input _watch_value, virtual_size and layout).
#
# Input's value watcher sets `virtual_size` (a layout reactive) to the value's width: every key typed into the `:`
# command line, a filter or the ask pane, and the ask pane's input cleared as a question goes, laid the whole screen
# out again (40 of the ~60 layouts in 20 answers of bench/ask_first_token.py). An Input is one row high and
# scrolls its value sideways without scrollbars, so the size is set without the layout; Textual's watcher does the
# rest (suggestion, validation, Changed) and finds the size already set. An Input of auto width keeps the layout.

TEXTUAL_INPUT_WATCH_VALUE: Any = Input.__dict__["_watch_value"]
"""Textual's own watcher, kept for the test that tells when an upgrade fixes it."""


def _watch_input_value(self: Input, value: str) -> None:
    if self.is_mounted and not self.styles.auto_dimensions:
        self.set_reactive(Widget.virtual_size, Size(self.content_width, 1))
    TEXTUAL_INPUT_WATCH_VALUE(self, value)


def type_without_layout() -> None:
    """An Input's value changes without laying out the screen (idempotent)."""
    Input._watch_value = _watch_input_value  # type: ignore[method-assign]


# The xterm input parser of Textual's own drivers (private), for app/web/session_driver.py: a browser tab's keys
# parsed in the serve process, as Textual's WebDriver parses them in a process of its own. tests/ui/
# test_serve_browser.py fails (a key pressed in the page loads a model) if an upgrade moves or changes it.
TabInputParser = XTermParser
