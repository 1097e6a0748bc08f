"""The dashboard's footer, rebuilt only when what it shows changed.

Textual's Footer recomposes (unmounts and mounts ~15 key widgets, each styled anew) whenever the screen's bindings
are updated, and they are updated on every focus change: `f` (fleet view and back) moves the focus between two
tables with the same keys, and the rebuild was most of that key's cost (~150 ms a press on a loaded machine, over
a second under a log flood). Here the keys the footer would show (key, description, enabled, tooltip) are compared
with the ones it shows, and an unchanged set is left alone.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from textual.screen import Screen
from textual.widgets import Footer


def shown_keys(screen: Screen[Any]) -> tuple[Hashable, ...]:
    """What the footer draws from the screen's active bindings: the shown ones, in order, with their state."""
    return tuple(
        (b.key, b.action, b.description, b.key_display, b.tooltip, enabled, tooltip)
        for _node, b, enabled, tooltip in screen.active_bindings.values()
        if b.show
    )


class QuietFooter(Footer):
    _drawn: tuple[Hashable, ...] | None = None

    def bindings_changed(self, screen: Screen[Any]) -> None:
        if self.is_attached and screen is self.screen and screen.app.app_focus:
            now = shown_keys(screen)
            if now == self._drawn:
                return
            self._drawn = now
        super().bindings_changed(screen)
