"""The keyed diff every table here is updated with: a table fed whole desired states (or a delta of some rows).

Rows are keyed (model id; machine and model in the fleet view). An update changes only the rows that differ, adds
and removes only the rows that came or went, and restores the cursor to the row it was on: clearing and refilling
made the cursor jump to the top and the table flicker on every status change. A changed row repaints only its line.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from operator import attrgetter, itemgetter
from typing import Any, ClassVar

from textual import events
from textual.actions import SkipAction
from textual.binding import Binding, BindingType
from textual.geometry import Size

from app.services.activity.metrics import ModelActivity
from app.services.core.router_types import ModelInfo
from app.ui.dashboard.model_cells import model_cells
from app.ui.text.glyphs import Glyphs
from app.ui.text.plain_text import plain
from app.ui.widgets.border_text import set_border_text
from app.ui.widgets.column_plan import ColumnFit, plan, wanted
from app.ui.widgets.sticky_sizes import SizeHold
from app.ui.widgets.table_rows import Col, Row, RowDiff, diff_rows, width_of
from app.ui.widgets.virtual_table import VirtualTable

CellsOf = tuple[ModelInfo, tuple[int, bool, ModelActivity | None, str], Row]


_TEXT = attrgetter("text")


def _less(counts: Counter[int], width: int) -> None:
    left = counts[width] - 1
    if left > 0:
        counts[width] = left
    else:
        del counts[width]


class KeyedTable(VirtualTable):
    """A VirtualTable fed whole desired states and updated by keyed diff. Subclasses say what the rows are."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("o", "cycle_sort", "Sort", show=False, id="sort"),
        Binding("O", "reverse_sort", "Reverse sort", show=False, id="sort_reverse"),
        Binding(
            "escape", "clear_filter", "Clear the table's marks, then its filter", show=False, id="table_clear_filter"
        ),
        Binding("space", "toggle_mark", "Mark", show=False, id="mark"),
    ]

    def __init__(
        self, columns: Sequence[Col], glyphs: Glyphs, fits: Sequence[ColumnFit] | None = None, **kw: Any
    ) -> None:
        super().__init__(columns, **kw)
        self.col_fits = tuple(fits) if fits is not None else tuple(ColumnFit() for _ in self.cols)
        """What each column can hold, how important it is (widgets/column_plan.py)."""
        self._resized_to = Size(0, 0)
        self.glyphs = glyphs
        self.sort_index = 0
        self.sort_reverse = False
        self.filter_text = ""
        self._cell_cache: dict[str, CellsOf] = {}
        self._width_counts: list[Counter[int]] = [Counter() for _ in self.cols]
        """Per column, how many rows have a cell of each width: a column is as wide as its widest cell now, so it
        narrows again when that cell narrows or goes (a "loading  42% ██▌··" badge widened status for good)."""
        self._hold = SizeHold()
        self._narrowing = False
        self._shape_done: tuple[int, bool] | None = None
        self._last_shape: tuple[int, bool, ModelActivity | None, str] = (0, False, None, "")

    def on_mount(self) -> None:
        self._show_sort()

    # ---- what subclasses provide ----

    def desired_rows(self) -> dict[str, Row]:
        raise NotImplementedError

    # ---- applying ----

    @property
    def id_width(self) -> int:
        """Room for the id column: what is left beside the essential columns, so status is never cut off."""
        return max(10, min(48, (self.size.width or 80) - 46))

    @property
    def narrow(self) -> bool:
        return (self.size.width or 80) < 70

    def refresh_rows(self) -> RowDiff:
        self._shape_done = (self.id_width, self.narrow)
        return self.apply_rows(self.desired_rows())

    def apply_rows(self, desired: Mapping[str, Row], only: Collection[str] | None = None) -> RowDiff:
        """Make the table show `desired`. With `only` (a delta), `desired` holds just those keys' rows and a key of
        `only` missing from it is a row to remove; every other row is left as it is."""
        rows = self.rows_now
        if only is None:
            diff = diff_rows(rows, desired)
        else:
            diff = diff_rows({k: r for k in only if (r := rows.get(k)) is not None}, desired)
        if not diff:
            return diff
        cursor_key = self.cursor_key()
        counts = self._width_counts
        for key in diff.remove:
            for i, cell in enumerate(rows.pop(key)):
                _less(counts[i], width_of(cell.text))
        changed: dict[str, None] = {}
        for key, i, cell in diff.update:
            _less(counts[i], width_of(rows[key][i].text))
            counts[i][width_of(cell.text)] += 1
            changed[key] = None
        for key in changed:
            rows[key] = desired[key]
        if diff.add:
            added = [row for _, row in diff.add]
            for i, column in enumerate(counts):  # column by column: 20,000 rows are added at once
                # Each distinct text measured once (many rows show the same size or status), counted in C.
                for text, n in Counter(map(_TEXT, map(itemgetter(i), added))).items():
                    column[width_of(text)] += n
            rows.update(diff.add)  # appended: rows sorting equal keep the order they came in
        # Widths are set at once, not left to a later idle: a paint in between drew new rows at the old widths.
        self._lay_out(self._hold.widths(self._wanted_widths(), self.scrollable_content_region.width))
        self._narrow_later()
        order = self.order
        if diff.add or diff.remove or any(i == self.sort_index for _, i, _ in diff.update):
            order = self._sorted()
        if order != self.order:
            self.set_order(order)
        else:
            # Only their lines are drawn again: a download's progress changes its state cell, the column the table
            # sorts by, twice a second, and a whole table drawn for it was most of what a pull cost the screen.
            self.rows_changed(changed)
        self._restore_cursor(cursor_key)
        return diff

    def _wanted_widths(self) -> list[int]:
        """Each column as wide as what it can hold (its floor), its widest cell shown now, or its header."""
        widest = [max(c, default=0) for c in self._width_counts]
        return wanted([label.cell_len for label in self.labels], widest, self.col_fits)

    def _lay_out(self, widths: Sequence[int]) -> None:
        """The columns that fit the room at these widths; the border says which are hidden."""
        before = self.hidden
        empty = [not counts or set(counts) == {0} for counts in self._width_counts]
        p = plan(widths, self.col_fits, self.scrollable_content_region.width, empty)
        now = self.col_widths
        # A hidden column keeps the width it was drawn at: its cells changing (the fleet's memory) redraw nothing.
        self.set_widths([now[i] if i in p.hidden and i in before else w for i, w in enumerate(p.widths)], p.hidden)
        if p.hidden != before:
            self._show_sort()

    def hidden_labels(self) -> list[str]:
        return [self.cols[i].label for i in sorted(self.hidden)]

    def _narrow_later(self) -> None:
        if self._narrowing or self._hold.held == self._wanted_widths():
            return
        self._narrowing = True
        self.set_timer(self._hold.due_in() + 0.05, self._narrow)

    def _narrow(self) -> None:
        self._narrowing = False
        if self._hold.due_in() > 0:
            self._narrow_later()  # a wide cell came back meanwhile: held from then
        else:
            self._fit_widths()

    def _fit_widths(self) -> None:
        """Widths exactly as the rows shown now need them."""
        self._lay_out(self._hold.reset(self._wanted_widths()))

    def reset_rows(self) -> None:
        """Empty the table, columns back to their headers' width: another machine's list is another table."""
        self.rows_now = {}
        self._cell_cache.clear()
        self._width_counts = [Counter() for _ in self.cols]
        self._fit_widths()
        self.cursor_row = 0
        self.set_order([])
        self.scroll_to(0, 0, animate=False, immediate=True)

    def cells(
        self,
        m: ModelInfo,
        g: Glyphs,
        id_width: int,
        narrow: bool,
        key: str = "",
        act: ModelActivity | None = None,
        why: str = "",
    ) -> Row:
        """model_cells, remembered per row: the fleet hands the same ModelInfo objects back for models that did
        not change, and rebuilding 500 rows on every flush was most of a burst's cost."""
        k = key or m.id
        shape = (id_width, narrow, act, why)
        hit = self._cell_cache.get(k)
        if hit is not None and hit[0] is m and hit[1] == shape:
            return hit[2]
        if shape == self._last_shape:
            shape = self._last_shape  # one tuple for the rows of one shape, not one per row
        self._last_shape = shape
        row = model_cells(m, g, id_width, narrow, act, why)
        self._cell_cache[k] = (m, shape, row)
        return row

    def show_row(self, key: str) -> None:
        """Put the cursor on the row `key`, when there is one."""
        index = self._index.get(key)
        if index is not None:
            self.move_cursor(row=index, animate=False, scroll=True)

    def _restore_cursor(self, key: str | None) -> None:
        index = None if key is None else self._index.get(key)
        if index is None:
            self._announce()  # its row went away: the cursor stays where it was, on the row that slid in
        elif index != self.cursor_row:
            self.move_cursor(row=index, animate=False, scroll=False)

    # ---- sorting ----

    def _show_sort(self) -> None:
        # In the border rather than the header: a changing header label would not resize its column.
        arrow = self.glyphs.sort_down if self.sort_reverse else self.glyphs.sort_up
        marks = f"{len(self.marked)} marked (Esc unmarks) {self.glyphs.dot} " if self.marked else ""
        sort = f"sort: {self.cols[self.sort_index].label} {arrow}"
        hidden = f"hidden: {', '.join(self.hidden_labels())} {self.glyphs.dot} " if self.hidden else ""
        set_border_text(self, subtitle=plain(marks + self.filter_note() + hidden + sort))

    def filter_note(self) -> str:
        if not self.filter_text:
            return ""
        sep = self.glyphs.sep
        return f"filter: {self.filter_text} {sep} Esc clears {sep} "

    def _sorted(self) -> list[str]:
        i, rows = self.sort_index, self.rows_now
        return sorted(rows, key=lambda k: rows[k][i].sort, reverse=self.sort_reverse)

    def _sort(self) -> None:
        self.set_order(self._sorted())

    def _resort(self) -> None:
        cursor_key = self.cursor_key()
        self._show_sort()
        self._sort()
        self._restore_cursor(cursor_key)

    def action_cycle_sort(self) -> None:
        self.sort_index = (self.sort_index + 1) % len(self.cols)
        self.sort_reverse = False
        self._resort()

    def action_reverse_sort(self) -> None:
        self.sort_reverse = not self.sort_reverse
        self._resort()

    def action_clear_filter(self) -> None:
        if self.marked:
            self.clear_marks()
            self._show_sort()
            return
        if not self.filter_text:
            raise SkipAction()  # nothing to clear: Esc is someone else's
        self.set_filter("")

    def action_toggle_mark(self) -> None:
        self.toggle_mark()
        self._show_sort()

    def set_filter(self, text: str) -> None:
        self.filter_text = text
        self._show_sort()
        self.refresh_rows()
        self._fit_widths()  # the operator changed what is shown: no width held from before

    def on_resize(self, event: events.Resize) -> None:
        if event.size == self._resized_to:
            return  # `f` shows a table again at the size it had
        self._resized_to = event.size
        self._fit_widths()
        # Rows depend on the size only through the id column's room and narrowness.
        if self.rows_now and (self.id_width, self.narrow) != self._shape_done:
            self.refresh_rows()
