"""Changing a DataTable in place so that repainting costs what changed, not what is shown.

DataTable keys every render cache (cells, rows, lines, row order, line offsets) by one update count that each
add_row, remove_row and update_cell bumps, and then refreshes the whole widget: one changed cell re-rendered every
visible cell, and at 20,000 rows each bump also rebuilt the row order and offsets (O(rows) per update). add_row sets
the cursor (a reactive with watchers) and measures every cell again on idle; remove_row rebuilds the row index per
row, so removing many rows was quadratic.

Here: a changed cell drops only its own row's cache entries and refreshes only that row's region (rows here are one
line high); rows are added and removed in one pass with a single bump. Column widths are the caller's business
(KeyedTable keeps them), so nothing here measures cells. This leans on DataTable's private fields (Textual 8.x);
tests/ui/test_table_quiet.py checks what is painted against a table updated the ordinary way.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from textual.geometry import Region
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, Row, RowKey


def set_cells(table: DataTable[Any], cells: Iterable[tuple[str, ColumnKey, Any]]) -> None:
    """Put new values in cells whose column width does not change, repainting only their rows."""
    rows: set[RowKey] = set()
    data: Any = table._data
    for key, col, value in cells:
        rk = RowKey(key)
        data[rk][col] = value
        rows.add(rk)
    if rows:
        forget_rows(table, rows)


def forget_rows(table: DataTable[Any], rows: set[RowKey]) -> None:
    """Drop the cached renders of these rows and repaint just them (when on screen)."""
    locations = table._row_locations
    indices = {i for rk in rows if (i := locations.get(rk)) is not None}
    header = table.header_height if table.show_header else 0
    lines = {i + header for i in indices}
    _discard(table._cell_render_cache, lambda k: k[0] in rows)
    _discard(table._row_render_cache, lambda k: k[0] in rows)
    _discard(table._row_renderable_cache, lambda k: k[1] in indices)
    _discard(table._line_cache, lambda k: k[0] in lines)
    width = max(table.size.width, table.virtual_size.width)
    top = int(table.scroll_offset.y)
    shown = range(top - 1, top + table.size.height + 1)  # rows off screen are drawn when scrolled to, not now
    for i in indices:
        if i in shown:
            table._refresh_region(Region(0, i + header, width, 1))


def add_rows(table: DataTable[Any], rows: Sequence[tuple[str, Sequence[Any]]]) -> None:
    """Append rows (height 1) in one go: what add_row does per row, with one cursor set and one update bump. The
    columns' widths must already fit the cells (they are not measured again)."""
    if not rows:
        return
    columns = [c.key for c in table.ordered_columns]
    locations = table._row_locations
    data: Any = table._data
    n = table.row_count
    for key, cells in rows:
        rk = RowKey(key)
        if rk in locations:
            raise ValueError(f"row {key!r} is already in the table")
        locations[rk] = n
        n += 1
        data[rk] = dict(zip(columns, cells, strict=True))
        table.rows[rk] = Row(rk, 1, None, False)
    _bumped(table, first=table.row_count == len(rows))


def remove_rows(table: DataTable[Any], keys: Iterable[str]) -> None:
    """Remove rows in one pass (remove_row rebuilds the whole row index for each one)."""
    gone = {RowKey(k) for k in keys} & set(table.rows)
    if not gone:
        return
    old = table._row_locations
    order = sorted((i, rk) for rk in old if rk not in gone and (i := old.get(rk)) is not None)
    fresh = type(old)({rk: n for n, (_, rk) in enumerate(order)})
    table._row_locations = fresh
    data: Any = table._data
    for rk in gone:
        del table.rows[rk]
        del data[rk]
    table._updated_cells = {c for c in table._updated_cells if c.row_key not in gone}
    table.hover_coordinate = table.hover_coordinate
    _bumped(table, first=False)


def _bumped(table: DataTable[Any], first: bool) -> None:
    """After rows came or went: one new layout, one cursor check, every cache stale (the rows moved)."""
    table._require_update_dimensions = True
    table.cursor_coordinate = table.cursor_coordinate
    if first and table.show_cursor and table.cursor_type != "none":
        table._highlight_cursor()
    table._update_count += 1
    table.refresh(layout=True)
    table.check_idle()


def _discard(cache: Any, drop: Any) -> None:
    for k in [k for k in list(cache.keys()) if drop(k)]:
        cache.discard(k)


__all__ = ["ColumnKey", "add_rows", "forget_rows", "remove_rows", "set_cells"]
