"""A Log for text that streams in a few characters at a time (the ask pane's reply): each write redraws the rows
it changed and tells the scrollbars the new extent, without laying the whole screen out again as Log.write does
(patches/textual_internals.py `append_to_log`). It follows the end only while the reader is at the end: scrolled
up to read an earlier answer, the view stays where it is while the next one streams in.
"""

from __future__ import annotations

from textual.widgets import Log

from app.ui.patches.textual_internals import append_to_log
from app.ui.widgets.scroll_extent import set_scroll_extent


class ReplyLog(Log):
    def write(self, data: str, scroll_end: bool | None = None) -> ReplyLog:
        at_end = self.is_vertical_scroll_end
        set_scroll_extent(self, append_to_log(self, data))
        follow = self.auto_scroll if scroll_end is None else scroll_end
        if follow and at_end:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        return self
