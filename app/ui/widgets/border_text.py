"""Border titles set only when they change.

Textual's border_title and border_subtitle setters repaint the whole widget every time, even with the same text:
the model table set its title on every flush (~1.6 a second in the soak's cycle), and each one drew every line of
the table again, blank ones included.
"""

from __future__ import annotations

from weakref import WeakKeyDictionary

from rich.text import Text
from textual.widget import Widget

_SHOWN: WeakKeyDictionary[Widget, tuple[Text | None, Text | None]] = WeakKeyDictionary()


def set_border_text(widget: Widget, *, title: Text | None = None, subtitle: Text | None = None) -> None:
    """Set what is given (None: leave that one as it is), repainting only for a change."""
    old_title, old_subtitle = _SHOWN.get(widget, (None, None))
    if title is not None and title != old_title:
        widget.border_title = title
        old_title = title
    if subtitle is not None and subtitle != old_subtitle:
        widget.border_subtitle = subtitle
        old_subtitle = subtitle
    _SHOWN[widget] = (old_title, old_subtitle)
