"""A table that holds its rows once and draws only the lines on screen (Textual's Line API).

DataTable kept every row twice (its own cells beside ours), hashed a row key per cell and rebuilt its row order and
line offsets on each change: at 20,000 models that bookkeeping was most of the first paint and ~100 MB. Here the rows
are the caller's dict (key -> Row of CellSpec) plus the display order (a list of keys and its index); a line is
turned into styled segments only when drawn, and kept in a small cache of drawn lines.

It paints what DataTable (Textual 8.x, cursor_type="row", no zebra stripes, no row labels, no fixed columns) painted
for the same cells: each cell is rendered the way DataTable renders one (Padding 1, the same component styles and
segment meta), so the screen, mouse hits and snapshots are those of before. tests/ui/test_vtable.py holds the two
side by side.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import ClassVar

from rich.padding import Padding
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Region, Size, Spacing, clamp
from textual.message import Message
from textual.renderables.styled import Styled
from textual.scroll_view import ScrollView
from textual.strip import Strip

from app.ui.widgets.scroll_extent import set_scroll_extent
from app.ui.widgets.table_rows import CellSpec, Col, Row, SortCell
from app.ui.widgets.virtual_table_look import COMPONENT_CLASSES, LOOK, cell_styles

LINE_RENDERS = 300
"""Bound of the drawn-lines cache: a few screens' worth (a line is kept per row, cursor/hover state and look; a
line of an older look or order is never hit again, so more would only hold memory)."""

CELL_RENDERS = 2000
"""Bound of the drawn-cells cache: cells are drawn without their row's meta, so the cells many rows share (a size,
a "no", an empty activity) are drawn once per look; a few screens' worth of the others."""

HEADER = -1
"""Row index of the header line."""


class RowMissing(LookupError):
    """No row has this key."""


class _RowMessage(Message):
    """What both row messages carry. Textual names a handler after the subclass's own qualified name
    (`VirtualTable.RowHighlighted` -> `on_virtual_table_row_highlighted`), so sharing this base changes no handler."""

    def __init__(self, table: VirtualTable, cursor_row: int, row_key: str) -> None:
        super().__init__()
        self.table = table
        self.cursor_row = cursor_row
        self.row_key = row_key

    @property
    def control(self) -> VirtualTable:
        return self.table


class VirtualTable(ScrollView, can_focus=True):
    """Rows by key, drawn on demand; a row cursor. The caller owns `rows_now` and tells the table what changed."""

    ALLOW_SELECT = False

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select_cursor", "Select", show=False),
        Binding("up", "cursor_up", "Cursor up", show=False),
        Binding("down", "cursor_down", "Cursor down", show=False),
        Binding("right", "scroll_right", "Scroll right", show=False),
        Binding("left", "scroll_left", "Scroll left", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("ctrl+home", "scroll_top", "Top", show=False),
        Binding("ctrl+end", "scroll_bottom", "Bottom", show=False),
        Binding("home", "scroll_home", "Home", show=False),
        Binding("end", "scroll_end", "End", show=False),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = set(COMPONENT_CLASSES)
    DEFAULT_CSS = LOOK

    class RowHighlighted(_RowMessage):
        """The cursor is on another row (or the row under it changed)."""

    class RowSelected(_RowMessage):
        """Enter, or a click on the cursor's row."""

    def __init__(
        self,
        columns: Sequence[Col],
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
        disabled: bool = False,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes, disabled=disabled)
        self.cols = tuple(columns)
        self.labels = tuple(Text.from_markup(c.label) for c in self.cols)
        self.col_widths = [label.cell_len for label in self.labels]
        """Content width of each column (without the cell padding); the owner keeps them fitted."""
        self.hidden: frozenset[int] = frozenset()
        """Indices of columns not drawn (the owner drops them when the room is short, widgets/column_plan.py)."""
        self.rows_now: dict[str, Row] = {}
        """The rows, by key: the one place they are held."""
        self.order: list[str] = []
        """Row keys in display order."""
        self._index: dict[str, int] = {}
        self.cursor_row = 0
        self.marked: set[str] = set()
        """Row keys marked for an action on all of them at once (space); rows that go away leave it."""
        self._announced: str | None = None
        self._hover_row = HEADER - 1
        self._show_hover = False
        self._lines: LRUCache[tuple[object, ...], tuple[Row | None, Strip]] = LRUCache(LINE_RENDERS)
        self._cells: LRUCache[tuple[object, ...], list[Segment]] = LRUCache(CELL_RENDERS)
        self._geometry = 0  # bumped when a column's width changes: every drawn line is stale
        self._look: tuple[object, ...] = ()
        self._blank: tuple[tuple[object, ...], Strip] = ((), Strip([]))
        self._base_style = Style()
        """The widget's own style, read once per drawing pass (render_lines)."""
        self._row_styles_look: tuple[object, ...] | None = None
        self._row_styles_cache: dict[tuple[bool, bool, bool, bool], tuple[Style, Style, Style]] = {}
        self._styled_as: tuple[str, frozenset[str], frozenset[str]] | None = None
        self._scroll_due = False

    # ---- reading ----

    @property
    def row_count(self) -> int:
        return len(self.order)

    def get_row_index(self, key: str) -> int:
        try:
            return self._index[key]
        except KeyError:
            raise RowMissing(key) from None

    def get_row(self, key: str) -> Row:
        try:
            return self.rows_now[key]
        except KeyError:
            raise RowMissing(key) from None

    def get_row_at(self, index: int) -> Row:
        return self.rows_now[self.order[index]]

    def get_cell(self, key: str, column: str) -> object:
        return self.get_row(key)[self.column_index(column)]

    def column_index(self, column: str) -> int:
        return next(i for i, c in enumerate(self.cols) if c.key == column)

    def column_width(self, column: str) -> int:
        return self.col_widths[self.column_index(column)]

    def cursor_key(self) -> str | None:
        return self.order[self.cursor_row] if 0 <= self.cursor_row < len(self.order) else None

    @property
    def table_width(self) -> int:
        hidden = self.hidden
        return sum(w + 2 for i, w in enumerate(self.col_widths) if i not in hidden)

    # ---- telling the table what changed ----

    def set_order(self, order: list[str]) -> None:
        """A new display order (rows came, went or were sorted): every line on screen is drawn again."""
        self.order = order
        self._index = {k: i for i, k in enumerate(order)}
        if self.marked:
            self.marked &= self._index.keys()
        self.cursor_row = clamp(self.cursor_row, 0, max(0, len(order) - 1))
        self._fit_virtual_size()
        self.refresh()

    def toggle_mark(self) -> None:
        """Mark the cursor's row, or unmark it, and go down a row (marking a run is space, space, space)."""
        key = self.cursor_key()
        if key is None:
            return
        self.marked.symmetric_difference_update({key})
        self.refresh_row(self.cursor_row)
        self.move_cursor(row=self.cursor_row + 1)

    def clear_marks(self) -> None:
        if self.marked:
            self.marked.clear()
            self.refresh()

    def set_widths(self, widths: Sequence[int], hidden: frozenset[int] | None = None) -> None:
        """New column content widths (and columns hidden, when given): laid out now, every line drawn at them."""
        hidden = self.hidden if hidden is None else hidden
        if list(widths) != self.col_widths or hidden != self.hidden:
            self.col_widths = list(widths)
            self.hidden = hidden
            self._geometry += 1
            self._fit_virtual_size()
            self.refresh()

    def rows_changed(self, keys: Iterable[str]) -> None:
        """These rows (already in `rows_now`, same order) have new cells: repaint just their lines, when on screen."""
        for key in keys:
            index = self._index.get(key)
            if index is not None:
                self.refresh_row(index)
        self._announce()

    def _fit_virtual_size(self) -> None:
        set_scroll_extent(self, Size(self.table_width, len(self.order) + 1))

    def refresh_row(self, index: int) -> None:
        y = index + 1 - int(self.scroll_offset.y)
        if 1 <= y < self.size.height:
            self.refresh(Region(0, y, self.size.width, 1))

    # ---- the cursor ----

    def move_cursor(self, *, row: int | None = None, animate: bool = False, scroll: bool = True) -> None:
        """As DataTable's: a move to another row always scrolls it into view; `scroll` also when it stays."""
        if row is None:
            return
        row = clamp(row, 0, max(0, len(self.order) - 1))
        old = self.cursor_row
        if row != old:
            self.cursor_row = row
            self.refresh_row(old)
            self.refresh_row(row)
            self._announce()
        if scroll or row != old:
            self._scroll_cursor_into_view(animate)

    def _announce(self) -> None:
        key = self.cursor_key()
        if key is not None and key != self._announced:
            self._announced = key
            self.post_message(self.RowHighlighted(self, self.cursor_row, key))

    def _scroll_cursor_into_view(self, animate: bool = False) -> None:
        if not self.size.height:  # hidden, or not laid out yet (a table just shown): once it has a size
            self._scroll_due = True
            return
        self._scroll_due = False
        width = max(self.size.width, self.table_width)
        region = Region(int(self.scroll_x), self.cursor_row + 1, width, 1)
        self.scroll_to_region(region, animate=animate, spacing=Spacing(1, 0, 0, 0), force=True)

    def on_resize(self, _: events.Resize) -> None:
        if self._scroll_due and self.size.height:
            self.call_after_refresh(self._scroll_cursor_into_view)

    def _set_hover(self, active: bool) -> None:
        if active != self._show_hover:
            self._show_hover = active
            self._refresh_hovered()

    def _refresh_hovered(self) -> None:
        if self._hover_row == HEADER:
            self.refresh(Region(0, 0, self.size.width, 1))
        elif self._hover_row >= 0:
            self.refresh_row(self._hover_row)

    def action_cursor_up(self) -> None:
        self._set_hover(False)
        self.move_cursor(row=self.cursor_row - 1, scroll=False)

    def action_cursor_down(self) -> None:
        self._set_hover(False)
        self.move_cursor(row=self.cursor_row + 1, scroll=False)

    def _page(self) -> int:
        return self.scrollable_content_region.height - 1

    def action_page_down(self) -> None:
        self._set_hover(False)
        height = self._page()
        rows = min(len(self.order) - self.cursor_row, height + 1)
        self.scroll_relative(y=height, animate=False, force=True)
        self.move_cursor(row=self.cursor_row + rows - 1, scroll=False)

    def action_page_up(self) -> None:
        self._set_hover(False)
        height = self._page()
        rows = min(self.cursor_row + 1, height + 1)
        self.scroll_relative(y=-height, animate=False)
        self.move_cursor(row=self.cursor_row - rows + 1, scroll=False)

    def action_scroll_top(self) -> None:
        self._set_hover(False)
        self.move_cursor(row=0, scroll=False)

    def action_scroll_bottom(self) -> None:
        self._set_hover(False)
        self.move_cursor(row=len(self.order) - 1, scroll=False)

    def action_scroll_home(self) -> None:
        self._set_hover(False)
        self.scroll_x = 0

    def action_scroll_end(self) -> None:
        self._set_hover(False)
        self.scroll_x = self.max_scroll_x

    def action_select_cursor(self) -> None:
        self._set_hover(False)
        key = self.cursor_key()
        if key is not None:
            self.post_message(self.RowSelected(self, self.cursor_row, key))

    # ---- the mouse: rows are found by the meta their segments carry, as in DataTable ----

    def on_mouse_move(self, event: events.MouseMove) -> None:
        row = event.style.meta.get("row")
        if not isinstance(row, int):
            self._set_hover(False)
            return
        if row != self._hover_row:
            self._refresh_hovered()  # the row it leaves
            self._hover_row = row
        self._show_hover = True
        self._refresh_hovered()

    def on_leave(self, _: events.Leave) -> None:
        self._set_hover(False)

    def on_click(self, event: events.Click) -> None:
        self._set_hover(True)
        row = event.style.meta.get("row")
        if not isinstance(row, int) or row == HEADER:
            return
        again = row == self.cursor_row
        self.move_cursor(row=row, scroll=False, animate=True)
        if again:
            self.action_select_cursor()
        event.stop()

    # ---- drawing ----

    def render_lines(self, crop: Region) -> list[Strip]:
        # What every line drawn now shares (a line cached under another look is not this one).
        self._base_style = self.rich_style
        self._look = (
            self.size.width,
            int(self.scroll_x),
            self._geometry,
            self._base_style,
            self.get_pseudo_class_state(),
            self._show_hover,
        )
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if y == 0:
            index, key, row = HEADER, "", None
        else:
            index = y - 1 + int(self.scroll_offset.y)
            if not 0 <= index < len(self.order):
                return self._blank_line(width)
            key = self.order[index]
            row = self.rows_now[key]
        hover = self._show_hover and index == self._hover_row
        cache_key = (key, index, index == self.cursor_row, hover, self._look, key in self.marked)
        hit = self._lines.get(cache_key)
        if hit is not None and hit[0] is row:
            return hit[1]
        strip = self.render_row(index, row, index == self.cursor_row, hover)
        self._lines[cache_key] = (row, strip)
        return strip

    def _blank_line(self, width: int) -> Strip:
        # Below the last row: one strip for the pass (rich_style walks every ancestor's styles; a table of a few
        # models on a tall pane draws mostly these).
        look = self._look
        if self._blank[0] != look:
            self._blank = (look, Strip.blank(width, self._base_style))
        return self._blank[1]

    def render_row(self, index: int, row: Row | None, cursor: bool, hover: bool) -> Strip:
        """One line, drawn: the header (index HEADER, row None) or a row. DataTable's _render_line_in_row and
        _render_line for one line-high rows."""
        header = index == HEADER
        marked = not header and bool(self.marked) and self.order[index] in self.marked
        pre, post, extend = self._row_styles(header, hover, cursor, marked)
        cells: Sequence[CellSpec | int] = range(len(self.cols)) if row is None else row  # the header: by column
        segments: list[Segment] = []
        hidden = self.hidden
        for column, (cell, content) in enumerate(zip(cells, self.col_widths, strict=True)):
            if column in hidden:
                continue
            # Drawn without the meta (so equal cells of any row are drawn once), which is then added to each part:
            # the meta carries no colour, so the styles are those of drawing it with the meta.
            meta = Style.from_meta({"row": index, "column": column})
            drawn = self._drawn_cell(cell, content + 2, pre, post)
            segments += [Segment(text, style + meta if style else meta) for text, style, _ in drawn]
        width = self.size.width
        extend += Style.from_meta({"row": index, "column": 0, "out_of_bounds": True})
        segments.append(Segment(" " * max(0, width - self.table_width), extend))
        x1 = int(self.scroll_x)
        return Strip(segments).crop(x1, x1 + width).adjust_cell_length(width, self._base_style).simplify()

    def _row_styles(self, header: bool, hover: bool, cursor: bool, marked: bool) -> tuple[Style, Style, Style]:
        """(a cell's style before its own, the foreground after it, the style of the room right of the last column)
        for a line of this kind: worked out once per look, not per line (each is a walk of the widget's ancestors'
        styles: a third of what drawing a download's changed row cost)."""
        if self._row_styles_look != self._look:
            self._row_styles_look = self._look
            self._row_styles_cache.clear()
        key = (header, hover, cursor, marked)
        hit = self._row_styles_cache.get(key)
        if hit is None:
            get = self.get_component_rich_style
            row_style = self.get_component_styles("vtable--header").rich_style if header else self._base_style
            if marked:
                row_style = row_style + get("vtable--marked")
            component, post = cell_styles(get, header, hover, cursor)
            extend, _ = cell_styles(get, header, hover, cursor, css_foreground=False)
            hit = self._row_styles_cache[key] = (row_style + component, post, row_style + extend)
        return hit

    def _drawn_cell(self, cell: CellSpec | int, width: int, pre: Style, post: Style) -> list[Segment]:
        """A cell (or the label of column `cell`) as DataTable draws one: padded by one on each side, under the
        row's and cursor's styles."""
        key = (cell, width, pre, post)
        hit = self._cells.get(key)
        if hit is None:
            text = self.labels[cell] if isinstance(cell, int) else SortCell(cell)
            options = self.app.console_options.update_dimensions(width, 1).update(no_wrap=True)
            styled = Styled(Padding(text, (0, 1)), pre_style=pre, post_style=post)
            hit = self.app.console.render_lines(styled, options)[0]
            self._cells[key] = hit
        return hit

    def notify_style_update(self) -> None:
        super().notify_style_update()
        # Focus, hover and the widget's own style are in each drawn line's key (`_look`): a focus change (`f`, the
        # fleet view and back) keeps the lines drawn. A theme or class change makes them all stale.
        generation = (self.app.theme, frozenset(self.classes), frozenset(self.app.classes))
        if generation != self._styled_as:
            self._styled_as = generation
            self._lines.clear()
            self._cells.clear()
            self._row_styles_look = None
        self.refresh()
