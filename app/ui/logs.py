"""The log-tail panel: the selected router's log, following or paused, filterable by model and level, searchable.

Memory is bounded twice: the panel keeps at most `max_lines` parsed lines, and so does the RichLog it draws into.
While paused nothing is drawn; new lines are only counted, so the text under the operator's eyes does not move.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable
from typing import ClassVar

from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import RichLog

from app.services.textsafe import visible
from app.services.types import LogLine
from app.ui.format import DIM
from app.ui.glyphs import Glyphs
from app.ui.plain import plain

# Children print most failures without a level ("failed to load model"), so the words count too.
_ERROR_WORDS = re.compile(r"\b(error|failed|fatal|abort(ed)?|exception)\b", re.IGNORECASE)
_WARN_WORDS = re.compile(r"\b(warn(ing)?)\b", re.IGNORECASE)

LEVELS: tuple[str, ...] = ("", "WE", "E")  # all lines / warnings and errors / errors only
LEVEL_NAMES = {"": "all levels", "WE": "warnings+errors", "E": "errors"}
WHO_WIDTH = 10


def effective_level(ln: LogLine) -> str:
    if ln.level:
        return ln.level
    if _ERROR_WORDS.search(ln.text):
        return "E"
    if _WARN_WORDS.search(ln.text):
        return "W"
    return ""


def line_text(ln: LogLine, search: str, g: Glyphs) -> Text:
    level = effective_level(ln)
    style = {"E": "red", "W": "yellow", "D": DIM, "T": DIM}.get(level, "")
    who = visible(ln.model or (f"[{ln.port}]" if ln.port else ln.source))
    t = Text.assemble(
        (visible(ln.level or " "), f"bold {style}".strip()),
        " ",
        (g.clip(who, WHO_WIDTH).ljust(WHO_WIDTH), "cyan" if ln.model else DIM),
        " ",
        (visible(ln.text), style),
    )
    if search:
        t.highlight_regex(re.compile(re.escape(search), re.IGNORECASE), "reverse")
    return t


class LogPanel(RichLog):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("p", "toggle_follow", "Pause", id="log_follow"),
        Binding("w", "cycle_level", "Levels", id="log_level"),
        Binding("m", "toggle_model", "Model", id="log_model"),
        Binding("slash", "search", "Search", id="log_search"),
    ]

    following: reactive[bool] = reactive(True, init=False)

    def __init__(self, glyphs: Glyphs, max_lines: int, id: str | None = None) -> None:
        super().__init__(max_lines=max_lines, wrap=False, markup=False, highlight=False, id=id)
        self.glyphs = glyphs
        self.buffer: deque[LogLine] = deque(maxlen=max_lines)
        self.machine = ""
        self.level = ""
        self.model: str | None = None
        """Only this model's lines, when set."""
        self.current_model: str | None = None
        """The model selected in the table: what `m` filters to."""
        self.search = ""
        self.unseen = 0
        self.note = ""
        self.border_title = "log"

    # ---- feeding ----

    def set_source(self, machine: str, lines: Iterable[LogLine], note: str = "") -> None:
        """Show another router's log; `note` is said instead when there are no lines at all."""
        self.machine = machine
        self.note = note
        self.buffer.clear()
        self.buffer.extend(lines)
        if self.model is not None and self.model != self.current_model:
            self.model = None
        self.unseen = 0
        self.following = True
        self.rewrite()

    def append(self, lines: Iterable[LogLine]) -> None:
        new = list(lines)
        if not self.buffer and self.note:
            self.buffer.extend(new)
            self.rewrite()
            return
        self.buffer.extend(new)
        shown = [ln for ln in new if self.wanted(ln)]
        if not shown:
            return
        if self.following:
            self._write(shown)
        else:
            self.unseen += len(shown)
            self._subtitle()

    def wanted(self, ln: LogLine) -> bool:
        if self.model is not None and ln.model != self.model:
            return False
        if self.level:
            lvl = effective_level(ln)
            if not lvl or lvl not in self.level:
                return False
        return not self.search or self.search.lower() in ln.raw.lower()

    def rewrite(self) -> None:
        self.clear()
        if not self.buffer and self.note:
            self.write(Text(self.note, style=DIM))
        self._write([ln for ln in self.buffer if self.wanted(ln)])

    def _write(self, lines: list[LogLine]) -> None:
        if lines:
            # One write for the whole batch: RichLog renders each write separately, and a burst of 1,000 lines
            # written one by one held the UI for a visible moment.
            text = Text("\n").join(line_text(ln, self.search, self.glyphs) for ln in lines)
            self.write(text, scroll_end=True)
        self._subtitle()

    def _subtitle(self) -> None:
        self.border_title = plain(f"log: {self.machine}" if self.machine else "log")
        parts = ["following" if self.following else f"paused, {self.unseen} new lines"]
        parts.append(LEVEL_NAMES[self.level])
        if self.model:
            parts.append(f"model {self.model}")
        if self.search:
            parts.append(f"/{self.search}")
        self.border_subtitle = plain(f" {self.glyphs.dot} ".join(parts))  # a model name or a search: not markup

    # ---- filters ----

    def show_model(self, model: str | None) -> None:
        self.model = model
        self.rewrite()

    def set_search(self, text: str) -> None:
        self.search = text
        self.rewrite()

    def watch_following(self, value: bool) -> None:
        if value:
            self.unseen = 0
            self.rewrite()
        else:
            self._subtitle()

    # ---- actions ----

    def action_toggle_follow(self) -> None:
        self.following = not self.following

    def action_cycle_level(self) -> None:
        self.level = LEVELS[(LEVELS.index(self.level) + 1) % len(LEVELS)]
        self.rewrite()

    def action_toggle_model(self) -> None:
        self.show_model(None if self.model else self.current_model)

    def action_search(self) -> None:
        self.post_message(LogSearch())

    # Scrolling back through the log pauses it; going to the end follows again.
    def action_scroll_up(self) -> None:
        self.following = False
        super().action_scroll_up()

    def action_page_up(self) -> None:
        self.following = False
        super().action_page_up()

    def action_scroll_home(self) -> None:
        self.following = False
        super().action_scroll_home()

    def action_scroll_end(self) -> None:
        super().action_scroll_end()
        self.following = True

    def _on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        self.following = False
        super()._on_mouse_scroll_up(event)


class LogSearch(Message):
    """Asks the app to open its prompt for a log search (the prompt is shared with the table filter)."""
