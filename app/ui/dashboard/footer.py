"""The dashboard's footer, rebuilt only when what it shows changed.

Textual's Footer recomposes (unmounts and mounts ~15 key widgets, each styled anew) whenever the screen's bindings
are updated, and they are updated on every focus change: `f` (fleet view and back) moves the focus between two
tables with the same keys, and the rebuild was most of that key's cost (~150 ms a press on a loaded machine, over
a second under a log flood). Here the keys the footer would show (key, description, enabled, tooltip) are compared
with the ones it shows, and an unchanged set is left alone. A set that differs only in which keys are enabled (the
selected model loads or unloads: every cycle of a busy router) is applied to the key widgets in place: the rebuild
it used to cost was ~8 % of a core in the soak's cycle and left ~15 widgets' styles caches for the collector each
time.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from textual.screen import Screen
from textual.widgets import Footer

from app.ui.patches.textual_internals import footer_keys, set_key_disabled


def shown_keys(screen: Screen[Any]) -> tuple[Hashable, ...]:
    """What the footer draws from the screen's active bindings: the shown ones, in order, with their state."""
    return tuple(
        (b.key, b.action, b.description, b.key_display, b.tooltip, enabled, tooltip)
        for _node, b, enabled, tooltip in screen.active_bindings.values()
        if b.show
    )


def _layout(keys: tuple[Hashable, ...]) -> tuple[Hashable, ...]:
    """The part of shown keys that decides which key widgets exist: all but enabled and its tooltip."""
    return tuple(k[:5] for k in keys if isinstance(k, tuple))


def _states(screen: Screen[Any]) -> dict[str, tuple[bool, str, str]]:
    """Enabled, tooltip and description per action, from its first shown binding (the one Footer.compose draws)."""
    states: dict[str, tuple[bool, str, str]] = {}
    for _node, b, enabled, tooltip in screen.active_bindings.values():
        if b.show and b.action not in states:
            states[b.action] = (enabled, tooltip, b.description)
    return states


class QuietFooter(Footer):
    _drawn: tuple[Hashable, ...] | None = None

    def on_mount(self) -> None:
        # Footer.on_mount runs too (each class's handler is called) and subscribes for a call a turn later, after
        # the screen has drawn what changed the keys: a second screen update for the footer alone (41 of 222 in
        # 90 s of the soak's cycle). This one is called in the same turn, so a key dims in the update that shows
        # why; Footer's later call then finds nothing changed.
        self.screen.bindings_updated_signal.subscribe(self, self._enabled_changed, immediate=True)

    def _enabled_changed(self, screen: Screen[Any]) -> None:
        """In the publisher's turn: only a change of which keys are enabled, applied in place. A rebuild is left to
        Footer's own call, in the footer's turn (composed in another's, its keys' data bindings fail)."""
        if self.is_attached and screen is self.screen and screen.app.app_focus and self._drawn is not None:
            now = shown_keys(screen)
            if now != self._drawn and _layout(now) == _layout(self._drawn) and self._set_enabled(screen):
                self._drawn = now

    def bindings_changed(self, screen: Screen[Any]) -> None:
        if self.is_attached and screen is self.screen and screen.app.app_focus:
            now = shown_keys(screen)
            if now == self._drawn:
                return
            same_keys = self._drawn is not None and _layout(now) == _layout(self._drawn)
            self._drawn = now
            if same_keys and self._set_enabled(screen):
                return
        super().bindings_changed(screen)

    def _set_enabled(self, screen: Screen[Any]) -> bool:
        """Dim or undim the key widgets already mounted; False when there are none to update (then rebuild)."""
        keys = footer_keys(self)
        if not keys:
            return False
        states = _states(screen)
        for key in keys:
            if key.action not in states:
                return False
        for key in keys:
            enabled, tooltip, description = states[key.action]
            set_key_disabled(key, not enabled)
            if key.has_class("-disabled") == enabled:
                # The class still says it (Textual's rule would dim it at a later style pass), but the dim itself
                # is set inline: a class flip sends the key through the whole stylesheet (~7 % of the dashboard's
                # main thread in the soak's cycle, where the selected model's load and unload flip two keys).
                (key.remove_class if enabled else key.add_class)("-disabled", update=False)
                key.styles.text_style = "none" if enabled else "dim"
            # As Footer.compose sets them: a grouped key falls back on its binding's description.
            shown = (tooltip or description) if key.has_class("-grouped") else (tooltip or None)
            if key.tooltip != shown:
                key.tooltip = shown
        return True
