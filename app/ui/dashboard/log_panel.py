"""The log-tail panel: the selected router's log, following or paused, filterable by model and level, searchable.

Built on Textual's Line API: the panel keeps its lines packed (log_scrollback.py: the machine's own packed chunks
when a source is shown, then the LogLines the fleet sends, packed every 256) and renders only the rows on screen,
each once (an LRU of rendered rows). A RichLog rendered every line it was given into segments: ~3.6 KB a line, and
a 20,000 lines/s flood spent the UI loop rendering rows nobody saw.

What is kept: the last `max_lines` lines (the scrollback, `ui.log_lines`), and beside them the sequence numbers of
the ones that pass the filters, so a filtered view is as cheap to scroll as the full one. What is skipped: nothing
here; under a flood the fleet's follower hands over only what can be shown, with a marker line saying how many it
skipped (the log file on the serving machine is the record). Painting happens at most every PAINT_EVERY while
lines keep coming.

`W` wraps long lines onto the rows below (widgets/wrapped_rows.py): the rows each line takes are counted from its
length as it comes (not rendered), so a flood costs one addition a line, and a row is found by bisection.
"""

from __future__ import annotations

import bisect
import re
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import ClassVar, overload

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual import events
from textual.actions import SkipAction
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from app.services.core.log_lines import SKIPPED_SOURCE, LogLine
from app.services.core.textsafe import visible
from app.services.logs.scrollback import Scrollback
from app.ui.text.format import DIM
from app.ui.text.glyphs import Glyphs
from app.ui.text.plain_text import plain
from app.ui.widgets.border_text import set_border_text
from app.ui.widgets.scroll_extent import set_scroll_extent
from app.ui.widgets.wrapped_rows import WrappedRows, piece

# Children print most failures without a level ("failed to load model"), so the words count too.
_ERROR_WORDS = re.compile(r"\b(error|failed|fatal|abort(ed)?|exception)\b", re.IGNORECASE)
_WARN_WORDS = re.compile(r"\b(warn(ing)?)\b", re.IGNORECASE)

LEVELS: tuple[str, ...] = ("", "WE", "E")  # all lines / warnings and errors / errors only
LEVEL_NAMES = {"": "all levels", "WE": "warnings+errors", "E": "errors"}
WHO_WIDTH = 10
PAINT_EVERY = 0.25  # while lines keep coming, at most 4 paints a second: the eye cannot read faster anyway
# Rendered rows kept for reuse: about three screens' worth, whatever the scrollback. Each row also keeps the strips
# Textual derives from it and caches inside it (cropped, styled, filtered, divided by what overlaps: ~5 strips,
# ~2 KB a row), so 512 rows held ~1,150 strips more than 128 do and took ~8,000 followed lines to fill (a soak's
# first 15 minutes). A row not kept is rendered again when it comes back into view (~60 µs).
RENDERED_ROWS = 128


def _cells(ln: LogLine) -> int:
    """The cells a line takes on the panel, counted as _counted() counts them (not rendered)."""
    return len(ln.text) + (2 if ln.source == SKIPPED_SOURCE else WHO_WIDTH + 3)


def effective_level(ln: LogLine) -> str:
    if ln.level:
        return ln.level
    if _ERROR_WORDS.search(ln.text):
        return "E"
    if _WARN_WORDS.search(ln.text):
        return "W"
    return ""


def line_text(ln: LogLine, search: str, g: Glyphs) -> Text:
    """The one place a log line becomes styled text (outside text: plain Text, never markup)."""
    if ln.source == SKIPPED_SOURCE:
        return Text(f"{g.ellipsis} {ln.text}", style=f"italic {DIM}")
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


class FilteredLines(Sequence[LogLine]):
    """The lines of a scrollback whose sequence numbers are picked, as a sequence of its own (nothing copied)."""

    def __init__(self, lines: Scrollback, picked: deque[int], first: int) -> None:
        self._lines, self._picked, self._first = lines, picked, first

    def __len__(self) -> int:
        return len(self._picked)

    @overload
    def __getitem__(self, i: int) -> LogLine: ...

    @overload
    def __getitem__(self, i: slice) -> list[LogLine]: ...

    def __getitem__(self, i: int | slice) -> LogLine | list[LogLine]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        return self._lines[self._picked[i] - self._first]


COPY_BOUND = 1_000_000
"""Characters `y`/`Y` put on the clipboard at most (a terminal may refuse a longer OSC 52)."""


class LogPanel(ScrollView, can_focus=True):
    DEFAULT_CSS = """
    LogPanel {
        background: $surface;
        color: $foreground;
        overflow-y: scroll;
        &:focus {
            background-tint: $foreground 5%;
        }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("p", "toggle_follow", "Pause", id="log_follow"),
        Binding("w", "cycle_level", "Levels", id="log_level"),
        Binding("W", "toggle_wrap", "Wrap", show=False, id="log_wrap"),
        # Not `m`: that is the model files, wherever the focus is (one meaning per key).
        Binding("M", "toggle_model", "Model", id="log_model"),
        # The dashboard's own action, run in this key's turn: as a message to it, the prompt opened a turn late and
        # a key typed right after "/" went to the log instead ("m" toggled the model filter).
        Binding("slash", "screen.log_search", "Find", id="log_search"),
        Binding("n", "find_next(1)", "Next match", show=False, id="log_find_next"),
        Binding("N", "find_next(-1)", "Previous match", show=False, id="log_find_prev"),
        Binding("ampersand", "screen.log_filter", "Filter", show=False, id="log_filter"),
        Binding("y", "copy(False)", "Copy", show=False, id="log_copy"),
        Binding("Y", "copy(True)", "Copy all", show=False, id="log_copy_all"),
        Binding("escape", "clear_filter", "Clear the search and the model filter", show=False, id="log_clear_filter"),
    ]

    following: reactive[bool] = reactive(True, init=False)

    def __init__(self, glyphs: Glyphs, max_lines: int, id: str | None = None) -> None:
        super().__init__(id=id)
        self.glyphs = glyphs
        self.max_lines = max_lines
        # Bound: the scrollback, packed (log_scrollback.py). `_filtered_seq` holds the sequence numbers of the lines
        # that pass the filters, so they leave together with the buffer's oldest.
        self.buffer = Scrollback(max_lines)
        self._filtered_seq: deque[int] = deque(maxlen=max_lines)
        self._seq = 0  # lines ever added; buffer[0] is line number _seq - len(buffer)
        self.machine = ""
        self.level = ""
        self.model: str | None = None
        """Only this model's lines, when set."""
        self.current_model: str | None = None
        """The model selected in the table: what `m` filters to."""
        self.search = ""
        """`&`: only the lines holding it are shown."""
        self.find = ""
        """`/`: every line stays; the ones holding it are marked and `n`/`N` go from one to the next."""
        self.found: tuple[int, int] | None = None
        """(the match under the eye, of how many) since the last `/`, `n` or `N`; None when there is no find."""
        self._found_row: int | None = None  # the view's row of the match under the eye
        self.unseen = 0
        self.skipped = 0
        """Lines the follower skipped (not parsed, not kept) since this source was shown."""
        self.note = ""
        self.paints = 0
        self._width = 0
        self._rows: LRUCache[LogLine, Strip] = LRUCache(RENDERED_ROWS)
        self._paint_due = False
        self._last_paint = 0.0
        self._style = Style()
        self.wrap = False
        """`W`: long lines wrapped onto the rows below (no horizontal scrolling), or cut at the panel's edge."""
        self._wrapped = WrappedRows()  # while wrapping: the rows each line of the view takes
        self._wrapped_valid = False
        self.border_title = "log"

    # ---- what is shown ----

    @property
    def filtering(self) -> bool:
        return bool(self.model is not None or self.level or self.search)

    @property
    def filtered(self) -> FilteredLines:
        """The lines of the scrollback that pass the filters, oldest first."""
        return FilteredLines(self.buffer, self._filtered_seq, self._seq - len(self.buffer))

    @property
    def view(self) -> Sequence[LogLine]:
        """The lines on the panel's rows, oldest first."""
        return self.filtered if self.filtering else self.buffer

    @property
    def line_count(self) -> int:
        """The panel's rows: one a line, or the wrapped lines' rows."""
        if not self.view:
            return int(bool(self.empty_note))
        return self._wrapped_rows().total if self.wrap else len(self.view)

    def _wrapped_rows(self) -> WrappedRows:
        """The rows of the view's lines wrapped at the panel's width, counted again only when the width, the
        filters or the source changed (appended lines are counted as they come: _add)."""
        width = self.scrollable_content_region.width
        if not self._wrapped_valid or width != self._wrapped.width:
            view = self.view
            # The lines of packed chunks that fit are not unpacked (None: one row).
            lines = self.buffer.unless_within(width - WHO_WIDTH - 3) if view is self.buffer else view
            self._wrapped.reset(width, WHO_WIDTH + 3, (0 if ln is None else _cells(ln) for ln in lines))
            self._wrapped_valid = True
        return self._wrapped

    def _row_of(self, i: int) -> int:
        """The panel row where the view's line `i` starts."""
        return self._wrapped_rows().start(i) if self.wrap else i

    def _line_at(self, row: int) -> int:
        """The view's line on panel row `row`."""
        return self._wrapped_rows().locate(row)[0] if self.wrap else row

    @property
    def hides(self) -> bool:
        """A find, a filter or a model filter is in effect: what Esc clears."""
        return bool(self.search or self.find) or self.model is not None

    @property
    def empty_note(self) -> str:
        """What the panel says when no line is shown: that the filter hides them all, or the source's note."""
        if self.filtering and self.buffer:
            how = " · Esc clears" if self.hides else ""
            return f"no line matches the filter ({len(self.buffer):,} lines hidden){how}"
        return self.note

    def wanted(self, ln: LogLine) -> bool:
        if ln.source == SKIPPED_SOURCE:
            return True  # whatever the filter, the operator must know lines went by unseen
        if self.model is not None and ln.model != self.model:
            return False
        if self.level:
            lvl = effective_level(ln)
            if not lvl or lvl not in self.level:
                return False
        return not self.search or self.search.lower() in (ln.raw or ln.text).lower()

    # ---- feeding ----

    def set_source(self, machine: str, lines: Iterable[LogLine], note: str = "") -> None:
        """Show another router's log; `note` is said instead when there are no lines at all."""
        self.machine = machine
        self.note = note
        self.buffer.clear()
        self._width = 0
        if self.model is not None and self.model != self.current_model:
            self.model = None
        self.search = ""  # a search of another machine's log: it made this one look empty
        self.find, self.found, self._found_row = "", None, None
        self.unseen = 0
        self.skipped = 0
        self.buffer.extend(lines)  # a machine's own scrollback: its packed chunks are shared, not packed again
        self._seq += len(self.buffer)
        widest, self.skipped = self.buffer.summary()
        self._width = WHO_WIDTH + 3 + widest if self.buffer else 0  # as _counted() would make it, line by line
        self.following = True
        self.rewrite()

    def set_note(self, note: str) -> None:
        """Say `note` while there is no line (the machine went down or came back since the source was set)."""
        if note != self.note:
            self.note = note
            if not self.view:
                self.refresh()

    def append(self, lines: Iterable[LogLine]) -> None:
        new = self._add(lines)
        shown = sum(1 for ln in new if self.wanted(ln)) if self.filtering else len(new)
        if not self.following:
            self.unseen += shown
        if new:
            self._paint_soon()

    def _add(self, lines: Iterable[LogLine]) -> list[LogLine]:
        new = list(lines)
        if len(new) > self.max_lines:
            new = new[-self.max_lines :]
        dropped = max(0, len(self.buffer) + len(new) - self.max_lines)
        self.buffer.extend(new)
        first_new = self._seq
        self._seq += len(new)
        filtering = self.filtering
        shown, left = new, dropped  # the view's lines added, and how many left its front
        if filtering:
            shown, left = [], 0
            for k, ln in enumerate(new):
                if self.wanted(ln):
                    self._filtered_seq.append(first_new + k)
                    shown.append(ln)
            oldest = self._seq - len(self.buffer)
            while self._filtered_seq and self._filtered_seq[0] < oldest:
                self._filtered_seq.popleft()
                left += 1
        for ln in new:
            self._counted(ln)
        if self.wrap and self._wrapped_valid:
            dropped = self._wrapped.drop(left)  # rows, now
            self._wrapped.extend(map(_cells, shown))
        if dropped and not self.following and not filtering:
            # The oldest lines left the scrollback: keep the rows under the operator's eyes where they are.
            self.scroll_to(y=max(0, self.scroll_y - dropped), animate=False, immediate=True)
        return new

    def _counted(self, ln: LogLine) -> None:
        """A line joined the scrollback: its width and what it says was skipped."""
        if ln.source == SKIPPED_SOURCE:
            self.skipped += ln.skipped
        width = WHO_WIDTH + 3 + len(ln.text)
        if width > self._width:
            self._width = width

    def rewrite(self) -> None:
        """Filters changed: recompute which lines are shown (a scan of the scrollback) and paint now."""
        self._filtered_seq.clear()
        self._found_row = None  # rows are numbered anew: `n` finds its place again from the end
        if self.filtering:
            first = self._seq - len(self.buffer)
            for k, ln in self.buffer.candidates(self.search.lower(), self.model):
                if self.wanted(ln):
                    self._filtered_seq.append(first + k)
        self._rows.clear()
        self._wrapped_valid = False
        self._paint()

    def _paint_soon(self) -> None:
        if self._paint_due:
            return
        self._paint_due = True
        wait = self._last_paint + PAINT_EVERY - time.monotonic()
        if wait > 0:
            self.set_timer(wait, self._paint)
        else:
            self.call_later(self._paint)

    def _paint(self) -> None:
        self._paint_due = False
        self._last_paint = time.monotonic()
        self.paints += 1
        # Wrapped, nothing is wider than the panel: no horizontal scrollbar.
        set_scroll_extent(self, Size(0 if self.wrap else self._width, self.line_count))
        self._stick()
        self._subtitle()
        self.refresh()
        # The new virtual size may bring a horizontal scrollbar, which moves the end: look again once laid out.
        self.call_after_refresh(self._stick)

    def _stick(self) -> None:
        if self.following and self.scroll_y != self.max_scroll_y:
            self.scroll_end(animate=False, immediate=True, x_axis=False)

    def on_resize(self) -> None:
        if self.wrap:  # another width: the lines take other rows
            self._paint()
        self.call_after_refresh(self._stick)

    def _subtitle(self) -> None:
        title = plain(f"log: {self.machine}" if self.machine else "log")
        # A filter in effect is said first, plainly, with how to clear it (a search once survived and hid every
        # line, its only trace a "/tensor" at the end of this line, where a narrow border cuts it off).
        filters = [f"model {self.model}"] if self.model else []
        if self.search:
            filters.append(f"&{self.search}")
        parts = ["filter: " + " ".join(filters), "Esc clears"] if filters else []
        if self.find:
            at = f"match {self.found[0]:,} of {self.found[1]:,}" if self.found and self.found[1] else "no match"
            parts.append(f"/{self.find}: {at} (n/N)")
        parts.append("following" if self.following else f"paused, {self.unseen:,} new lines")
        if self.skipped:
            parts.append(f"{self.skipped:,} skipped")
        parts.append(LEVEL_NAMES[self.level])
        if self.wrap:
            parts.append("wrapped")
        # A model name or a search: not markup.
        set_border_text(self, title=title, subtitle=plain(f" {self.glyphs.dot} ".join(parts)))

    # ---- rendering: only the rows on screen ----

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._rows.clear()

    def render_lines(self, crop: Region) -> list[Strip]:
        self._style = self.rich_style  # once a pass, not once a row: it walks the styles of every ancestor
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        style = self._style
        view = self.view
        i = scroll_y + y
        if not view:
            note = self.empty_note
            if i == 0 and note:
                strip = Strip(Text(visible(note), style=DIM).render(self.app.console))
                return strip.crop_extend(scroll_x, scroll_x + width, style).apply_style(style)
            return Strip.blank(width, style)
        k = 0  # the piece of a wrapped line on this row
        if self.wrap:
            i, k = self._wrapped_rows().locate(i)
        if i >= len(view):
            return Strip.blank(width, style)
        ln = view[i]
        row = self._rows.get(ln)
        if row is None:
            text = line_text(ln, self.find or self.search, self.glyphs)
            if self.find and i == self._found_row:
                text.stylize("bold underline")
                row = Strip(text.render(self.app.console), cell_len(text.plain))
                return self._shown(row, k, scroll_x, width)  # not kept: it moves
            row = Strip(text.render(self.app.console), cell_len(text.plain))
            self._rows[ln] = row
            if row.cell_length > self._width and not self.wrap:  # len() undercounts wide characters: widen
                self._width = row.cell_length
                self.call_later(self._paint_soon)
        return self._shown(row, k, scroll_x, width)

    def _shown(self, row: Strip, k: int, scroll_x: int, width: int) -> Strip:
        """What of a line's strip is on screen: piece `k` of it wrapped, else the columns scrolled to."""
        style = self._style
        if self.wrap:
            wrapped = self._wrapped
            return piece(row, k, wrapped.width, wrapped.indent, style).crop_extend(0, width, style).apply_style(style)
        return row.crop_extend(scroll_x, scroll_x + width, style).apply_style(style)

    # ---- filters ----

    def show_model(self, model: str | None) -> None:
        self.model = model
        self.rewrite()

    def set_search(self, text: str) -> None:
        self.search = text
        self.rewrite()

    # ---- copy: `y` the lines on screen (or the match under the eye), `Y` every line shown ----

    def copied_text(self, everything: bool) -> str:
        """The lines to copy, as text with control characters made visible: what the clipboard gets is llamaherd's
        own OSC 52, carrying no sequence a log line held. Bounded by COPY_BOUND characters (the newest kept)."""
        view = self.view
        if everything:
            lines = view
        elif self.find and self._found_row is not None and self._found_row < len(view):
            lines = [view[self._found_row]]
        else:
            top = int(self.scroll_offset.y)
            first, end = self._line_at(top), self._line_at(top + self.size.height - 1) + 1
            lines = [view[i] for i in range(first, min(len(view), end))]
        out: list[str] = []
        size = 0
        for ln in reversed(lines):
            text = visible(ln.raw or ln.text)
            size += len(text) + 1
            if size > COPY_BOUND:
                break
            out.append(text)
        return "\n".join(reversed(out))

    def action_copy(self, everything: bool) -> None:
        text = self.copied_text(everything)
        if not text:
            raise SkipAction()
        self.app.copy_to_clipboard(text)
        n = text.count("\n") + 1
        said = f"copied {n:,} line{'s' if n != 1 else ''} (OSC 52: the terminal's clipboard)"
        self.app.notify(said, timeout=3, markup=False)

    # ---- find: `/`, then `n` (newer) and `N` (older) ----

    def set_find(self, text: str) -> None:
        """Mark the lines holding `text` and go to the newest: the log pauses there, as `less` does."""
        self.find = text
        self._rows.clear()
        self.found, self._found_row = None, None
        if text:
            self._go_to_match(self._matches(), len(self.view))
        self._subtitle()
        self.refresh()

    def _matches(self) -> list[int]:
        """The view's rows holding the find, oldest first. Packed chunks without it are not unpacked (a find in
        100,000 lines costs what a filter does)."""
        needle = self.find.lower()
        if not self.filtering:
            return [k for k, ln in self.buffer.candidates(needle) if needle in (ln.raw or ln.text).lower()]
        return [i for i, ln in enumerate(self.view) if needle in (ln.raw or ln.text).lower()]

    def _go_to_match(self, rows: list[int], before: int, step: int = -1) -> None:
        """The match `step` from `before` (-1: the last one above it, +1: the first one below), wrapping round."""
        if not rows:
            self.found, self._found_row = (0, 0), None
            return
        k = bisect.bisect_left(rows, before) - 1 if step < 0 else bisect.bisect_right(rows, before)
        k %= len(rows)
        self._found_row = rows[k]
        self.found = (k + 1, len(rows))
        self.following = False
        self.scroll_to(y=max(0, self._row_of(rows[k]) - self.size.height // 2), animate=False, immediate=True)

    def action_find_next(self, step: int) -> None:
        if not self.find:
            raise SkipAction()  # no find: `n` is someone else's
        here = self._found_row if self._found_row is not None else (len(self.view) if step < 0 else -1)
        self._go_to_match(self._matches(), here, step)
        self._subtitle()
        self.refresh()

    def watch_following(self, value: bool) -> None:
        if value:
            self.unseen = 0
            self._paint()
        else:
            self._subtitle()

    # ---- actions ----

    def action_toggle_follow(self) -> None:
        self.following = not self.following

    def action_toggle_wrap(self) -> None:
        """Wrap long lines (the whole of a reason readable) or cut them at the edge; the line at the top stays."""
        top = self._line_at(int(self.scroll_offset.y)) if self.view else 0
        self.wrap = not self.wrap
        self._wrapped_valid = False
        self._paint()
        if not self.following:
            self.scroll_to(x=0, y=self._row_of(top), animate=False, immediate=True)

    def action_cycle_level(self) -> None:
        self.level = LEVELS[(LEVELS.index(self.level) + 1) % len(LEVELS)]
        self.rewrite()

    def action_toggle_model(self) -> None:
        self.show_model(None if self.model else self.current_model)

    def action_clear_filter(self) -> None:
        """Esc: the search goes, and the model filter with it; with neither, Esc is someone else's."""
        if not self.hides:
            raise SkipAction()
        self.search = ""
        self.find, self.found, self._found_row = "", None, None
        self.show_model(None)

    # Scrolling back through the log pauses it; going to the end follows again. No scroll animation: each of its
    # frames rendered every row anew, ~20 frames for one page-up, for nothing the eye needs in a log.
    def _scroll(self, how: Callable[..., object], pause: bool) -> None:
        if not self.allow_vertical_scroll:
            raise SkipAction()
        if pause:
            self.following = False
        how(animate=False)

    def action_scroll_up(self) -> None:
        self._scroll(self.scroll_up, pause=True)

    def action_scroll_down(self) -> None:
        self._scroll(self.scroll_down, pause=False)

    def action_page_up(self) -> None:
        self._scroll(self.scroll_page_up, pause=True)

    def action_page_down(self) -> None:
        self._scroll(self.scroll_page_down, pause=False)

    def action_scroll_home(self) -> None:
        self._scroll(self.scroll_home, pause=True)

    def action_scroll_end(self) -> None:
        self.scroll_end(animate=False, immediate=True, x_axis=False)
        self.following = True

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        self.following = False  # Textual's own handler, called after this one, scrolls
