"""The model table of the selected machine, and the keyed diff every table here is updated with.

Rows are keyed by model id. An update changes only the cells that differ (`update_cell`), adds and removes only the
rows that came or went, and restores the cursor to the row it was on: clearing and refilling made the cursor jump
to the top and the table flicker on every status change.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, ClassVar

from rich.cells import cell_len
from textual import events
from textual.actions import SkipAction
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.coordinate import Coordinate
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowDoesNotExist

from app.services.activity import ModelActivity
from app.services.textsafe import visible
from app.services.types import ModelInfo, ModelState
from app.ui.activity_cells import activity_cell, machine_total
from app.ui.format import DIM, badge, human_bytes, human_count, human_ctx, state_rank, vision
from app.ui.glyphs import Glyphs
from app.ui.plain import plain
from app.ui.table_quiet import add_rows, remove_rows, set_cells
from app.ui.table_rows import CellSpec, Col, Row, RowDiff, diff_rows, width_of

MODEL_COLUMNS: tuple[Col, ...] = (
    Col("model", "model"),
    Col("status", "status"),
    Col("activity", "tok/s"),
    Col("vision", "vision"),
    Col("ctx", "ctx"),
    Col("size", "size"),
    Col("params", "params"),
    Col("aliases", "aliases"),
    Col("tags", "tags"),
    Col("source", "source"),
)


def model_cells(
    m: ModelInfo, g: Glyphs, id_width: int, narrow: bool, act: ModelActivity | None = None, why: str = ""
) -> Row:
    btext, bstyle = badge(m, g)
    if narrow and " " in btext and "%" in btext:
        btext = btext.rsplit(" ", 1)[0]  # the percentage is enough where columns are scarce
    if why:  # its last recorded change (ui/reason_cells.py)
        btext = f"{btext} · {why}"
    vtext, vstyle = vision(m)
    # Visible before clipping, so the width is that of what is shown (a newline in an id never splits its row).
    shown_id = visible(m.id)
    aliases = visible(", ".join(a for a in m.aliases if a != m.id))
    tags = visible(", ".join(m.tags))
    return (
        CellSpec(g.clip(shown_id, id_width), "bold", m.id.lower()),
        CellSpec(btext, bstyle, (state_rank(m), m.id.lower())),
        CellSpec(*activity_cell(act if m.state is ModelState.LOADED else None, g, narrow)),
        CellSpec(vtext, vstyle, {"yes": 0, "no": 1}.get(vtext, 2)),
        CellSpec(human_ctx(m.n_ctx), "", m.n_ctx or -1),
        CellSpec(human_bytes(m.size), "", m.size or -1),
        CellSpec(human_count(m.n_params), "", m.n_params or -1),
        CellSpec(g.clip(aliases, 24), DIM, aliases),
        CellSpec(g.clip(tags, 24), DIM, ",".join(m.tags)),
        CellSpec(visible(m.source), DIM, m.source),
    )


def matches(m: ModelInfo, text: str) -> bool:
    if not text:
        return True
    t = text.lower()
    hay = " ".join((m.id, *m.aliases, *m.tags, m.source, m.state.value)).lower()
    return t in hay


CELL_RENDERS = 2000
LINE_RENDERS = 300


class KeyedTable(DataTable[CellSpec]):
    """A DataTable fed whole desired states and updated by keyed diff. Subclasses say what the rows are."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("o", "cycle_sort", "Sort", show=False, id="sort"),
        Binding("O", "reverse_sort", "Reverse sort", show=False, id="sort_reverse"),
        Binding("escape", "clear_filter", "Clear the table's filter", show=False, id="table_clear_filter"),
    ]

    def __init__(self, columns: Sequence[Col], glyphs: Glyphs, **kw: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, **kw)
        # Bound: DataTable keeps 10,000 rendered cells, keyed by its update count, so every repaint adds new ones
        # until that bound: ~10 MB of segments for a table that shows a few hundred cells. A few screens' worth.
        self._cell_render_cache = LRUCache(CELL_RENDERS)
        # Same for rows and lines (1,000 each, also keyed by update count): entries of an older count are never hit
        # again, so a few screens' worth is all that helps.
        self._row_render_cache = LRUCache(LINE_RENDERS)
        self._row_renderable_cache = LRUCache(LINE_RENDERS)
        self._line_cache = LRUCache(LINE_RENDERS)
        self._resized_to = Size(0, 0)
        self._styled_as: tuple[str, frozenset[str], frozenset[str]] | None = None
        self.cols = tuple(columns)
        self.glyphs = glyphs
        self.rows_now: dict[str, Row] = {}
        self.sort_index = 0
        self.sort_reverse = False
        self.filter_text = ""
        self._cell_cache: dict[str, tuple[ModelInfo, tuple[int, bool, ModelActivity | None, str], Row]] = {}
        self._widths: list[dict[str, int]] = [{} for _ in self.cols]
        """Per column, each row's cell width: a column shrinks back when its widest cell narrows or goes."""
        self._shape_done: tuple[int, bool] | None = None

    def on_mount(self) -> None:
        for c in self.cols:
            self.add_column(c.label, key=c.key)
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
        if only is None:
            diff = diff_rows(self.rows_now, desired)
        else:
            diff = diff_rows({k: r for k in only if (r := self.rows_now.get(k)) is not None}, desired)
        if not diff:
            return diff
        cursor_key = self.cursor_key()
        shrunk: set[int] = set()  # columns whose widest cell may have narrowed or gone
        relayout = False
        with self.app.batch_update():
            if diff.remove:
                for key in diff.remove:
                    for i, widths in enumerate(self._widths):
                        if widths.pop(key, 0) >= self.columns[ColumnKey(self.cols[i].key)].content_width:
                            shrunk.add(i)
                remove_rows(self, diff.remove)
            # Column widths are set here, at once, rather than left to DataTable's next idle: a paint before that
            # idle drew new rows at the old widths ("chat…" under a header cut to "model"), and as DataTable caches
            # rendered lines by its update count rather than by width, that paint could stay until a later update.
            quiet: list[tuple[str, ColumnKey, CellSpec]] = []
            for key, i, cell in diff.update:
                # Only a wider cell widens its column; a narrower one that was the widest is fitted below.
                col = self.columns[ColumnKey(self.cols[i].key)]
                width = width_of(cell.text)
                before = self._widths[i].get(key, 0)
                self._widths[i][key] = width
                if width > col.content_width:
                    col.content_width = width
                    relayout = True
                elif width < before and before >= col.content_width:
                    shrunk.add(i)
                quiet.append((key, col.key, cell))
            # Only the changed rows are repainted (DataTable.update_cell repainted every visible cell).
            set_cells(self, quiet)
            if diff.add:
                for i, c in enumerate(self.cols):  # column by column: 20,000 rows are added at once
                    col = self.columns[ColumnKey(c.key)]
                    texts = {key: row[i].text for key, row in diff.add}
                    # width_of inline: a call per cell was a fifth of adding 20,000 rows
                    widths = {k: len(t) if t.isascii() and t.isprintable() else cell_len(t) for k, t in texts.items()}
                    self._widths[i].update(widths)
                    col.content_width = max(col.content_width, *widths.values())
                add_rows(self, diff.add)
            for i in shrunk:
                relayout = self._fit_column(i) or relayout
            if relayout:
                self._relayout()
            if only is None:
                self.rows_now = dict(desired)
            else:
                for key in diff.remove:
                    self.rows_now.pop(key, None)
                self.rows_now.update(desired)
            touched_sort = any(i == self.sort_index for _, i, _ in diff.update)
            if diff.add or touched_sort:
                self._sort()
            self._restore_cursor(cursor_key)
        return diff

    def _relayout(self) -> None:
        """A column's width changed: every line is drawn again, at the new widths."""
        self._require_update_dimensions = True
        self._update_count += 1
        self.refresh(layout=True)
        self.check_idle()

    def _fit_column(self, i: int) -> bool:
        """Narrow a column to its widest cell now (a "loading  42% ██▌··" badge widened status for good, pushing
        source off an 80-column screen); True when it narrowed. The width is set at once, like a widening."""
        col = self.columns[ColumnKey(self.cols[i].key)]
        widths = self._widths[i]
        fit = max(col.label.cell_len, *widths.values()) if widths else col.label.cell_len
        if fit >= col.content_width:
            return False
        col.content_width = fit
        return True

    def reset_rows(self) -> None:
        """Empty the table, columns back to their headers' width: another machine's list is another table."""
        self.clear(columns=False)
        self.rows_now = {}
        self._cell_cache.clear()
        self._widths = [{} for _ in self.cols]
        for col in self.columns.values():
            col.content_width = col.label.cell_len

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
        hit = self._cell_cache.get(k)
        if hit is not None and hit[0] is m and hit[1] == (id_width, narrow, act, why):
            return hit[2]
        row = model_cells(m, g, id_width, narrow, act, why)
        self._cell_cache[k] = (m, (id_width, narrow, act, why), row)
        return row

    def cursor_key(self) -> str | None:
        if not self.row_count:
            return None
        try:
            return self.coordinate_to_cell_key(Coordinate(self.cursor_row, 0)).row_key.value
        except Exception:
            return None

    def show_row(self, key: str) -> None:
        """Put the cursor on the row `key`, when there is one."""
        try:
            index = self.get_row_index(key)
        except RowDoesNotExist:
            return
        self.move_cursor(row=index, animate=False, scroll=True)

    def _restore_cursor(self, key: str | None) -> None:
        if key is None:
            return
        try:
            index = self.get_row_index(key)
        except RowDoesNotExist:
            return  # its row went away: the cursor stays where it was, on the row that slid in
        if index != self.cursor_row:
            self.move_cursor(row=index, animate=False, scroll=False)

    # ---- sorting ----

    def _show_sort(self) -> None:
        # In the border rather than the header: a changing header label would not resize its column.
        arrow = self.glyphs.sort_down if self.sort_reverse else self.glyphs.sort_up
        self.border_subtitle = plain(self.filter_note() + f"sort: {self.cols[self.sort_index].label} {arrow}")

    def filter_note(self) -> str:
        if not self.filter_text:
            return ""
        sep = self.glyphs.sep
        return f"filter: {self.filter_text} {sep} Esc clears {sep} "

    def _sort(self) -> None:
        col = self.cols[self.sort_index].key

        def key(cell: CellSpec) -> Any:
            return cell.sort

        self.sort(col, key=key, reverse=self.sort_reverse)

    def action_cycle_sort(self) -> None:
        cursor_key = self.cursor_key()
        self.sort_index = (self.sort_index + 1) % len(self.cols)
        self.sort_reverse = False
        self._show_sort()
        self._sort()
        self._restore_cursor(cursor_key)

    def action_reverse_sort(self) -> None:
        cursor_key = self.cursor_key()
        self.sort_reverse = not self.sort_reverse
        self._show_sort()
        self._sort()
        self._restore_cursor(cursor_key)

    def action_clear_filter(self) -> None:
        if not self.filter_text:
            raise SkipAction()  # nothing to clear: Esc is someone else's
        self.set_filter("")

    def set_filter(self, text: str) -> None:
        self.filter_text = text
        self._show_sort()
        self.refresh_rows()

    # `f` (the fleet view and back) moves the focus between two tables and shows one again at the size it had.
    # DataTable drops all its rendered cells and lines on both (a Resize counts as an update; a style update
    # clears the caches), so each visible cell was rendered anew: most of that key's cost. Its caches are keyed
    # by the pseudo classes (focus) and the widget's style already, so they are kept when nothing else changed.

    def on_resize(self, event: events.Resize) -> None:
        if event.size == self._resized_to:
            event.prevent_default()  # DataTable's own handler (a base class's): the size did not change
            return
        self._resized_to = event.size
        # Rows depend on the size only through the id column's room and narrowness.
        if self.rows_now and (self.id_width, self.narrow) != self._shape_done:
            self.refresh_rows()

    def notify_style_update(self) -> None:
        generation = (self.app.theme, frozenset(self.classes), frozenset(self.app.classes))
        if generation != self._styled_as:
            self._styled_as = generation
            super().notify_style_update()  # DataTable's: every rendered cell and line goes
            return
        ScrollView.notify_style_update(self)  # the widget's own style caches, not DataTable's renders
        self._styles_cache.clear()
        self._get_styles_to_render_cell.cache_clear()
        self.refresh()


class ModelTable(KeyedTable):
    """The selected machine's models, row key = model id."""

    def __init__(self, glyphs: Glyphs, **kw: Any) -> None:
        super().__init__(MODEL_COLUMNS, glyphs, **kw)
        self.machine = ""
        self.models: tuple[ModelInfo, ...] = ()
        self.activity: Mapping[str, ModelActivity] = {}
        self.notes: Mapping[str, str] = {}
        """Each model's last recorded change, by model id (set before `show`)."""

    def show(
        self,
        machine: str,
        models: Iterable[ModelInfo],
        stale: bool = False,
        activity: Mapping[str, ModelActivity] | None = None,
        only: Collection[str] | None = None,
        by_id: Mapping[str, ModelInfo] | None = None,
    ) -> RowDiff:
        """`only` (with `by_id`, the models by id): just these models changed, the other rows stay as they are."""
        if machine != self.machine:
            self.reset_rows()  # another machine's list is another table, not an update of this one
            self.machine = machine
            only = None
        self.models = tuple(models)
        self.activity = {} if stale else (activity or {})
        # A machine that is down keeps its last known list, dimmed, rather than an empty table.
        note = (" (nothing known yet)" if not self.models else " (last known)") if stale else ""
        total = machine_total(self.activity.values())  # in the title: a line more on the card moved the panes
        self.border_title = plain(f"models: {machine}{note}" + (f" · {total}" if total else ""))
        self.set_class(stale, "-stale")
        if only is not None and by_id is not None:
            return self.apply_rows(self.rows_for(only, by_id), only)
        return self.refresh_rows()

    def rows_for(self, keys: Collection[str], by_id: Mapping[str, ModelInfo]) -> dict[str, Row]:
        """desired_rows, for these models only (one missing or filtered out has no row)."""
        w, narrow, g, act = self.id_width, self.narrow, self.glyphs, self.activity
        return {
            k: self.cells(m, g, w, narrow, act=act.get(k), why=self.notes.get(k, ""))
            for k in keys
            if (m := by_id.get(k)) is not None and matches(m, self.filter_text)
        }

    def desired_rows(self) -> dict[str, Row]:
        w, narrow, g = self.id_width, self.narrow, self.glyphs
        act = self.activity
        return {
            m.id: self.cells(m, g, w, narrow, act=act.get(m.id), why=self.notes.get(m.id, ""))
            for m in self.models
            if matches(m, self.filter_text)
        }

    def selected_model(self) -> str | None:
        return self.cursor_key()
