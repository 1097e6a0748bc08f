"""table_quiet changes a DataTable in place through its private fields: what it paints must be what a table updated
through DataTable's own add_row / update_cell / remove_row paints."""

from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey

from app.ui.table_quiet import add_rows, remove_rows, set_cells

ROWS = [(f"k{i}", [Text(f"model-{i}"), Text("unloaded" if i % 2 else "loaded")]) for i in range(30)]


class Two(App[None]):
    def compose(self) -> ComposeResult:
        yield DataTable[Text](id="quiet")
        yield DataTable[Text](id="plain")


def lines(t: DataTable[Text]) -> list[str]:
    return [t.render_line(y).text for y in range(t.size.height)]


async def test_quiet_changes_paint_what_the_ordinary_ones_paint() -> None:
    app = Two()
    async with app.run_test(size=(60, 40)) as pilot:
        quiet = app.query_one("#quiet", DataTable)
        plain = app.query_one("#plain", DataTable)
        for t in (quiet, plain):
            t.add_column("model", key="model", width=12)
            t.add_column("status", key="status", width=10)
        add_rows(quiet, ROWS)
        for key, cells in ROWS:
            plain.add_row(*cells, key=key)
        await pilot.pause()
        assert quiet.row_count == plain.row_count == 30
        assert lines(quiet) == lines(plain)
        before = lines(quiet)

        set_cells(quiet, [("k3", ColumnKey("model"), Text("renamed"))])
        plain.update_cell("k3", "model", Text("renamed"))
        await pilot.pause()
        assert lines(quiet) == lines(plain)
        assert lines(quiet) != before and sum(a != b for a, b in zip(lines(quiet), before, strict=True)) == 1

        remove_rows(quiet, ["k0", "k5", "k29"])
        for k in ("k0", "k5", "k29"):
            plain.remove_row(k)
        await pilot.pause()
        assert quiet.row_count == plain.row_count == 27
        assert [r.key.value for r in quiet.ordered_rows] == [r.key.value for r in plain.ordered_rows]
        assert lines(quiet) == lines(plain)

        add_rows(quiet, [("new", [Text("newcomer"), Text("loading")])])
        plain.add_row(Text("newcomer"), Text("loading"), key="new")
        quiet.move_cursor(row=26)
        plain.move_cursor(row=26)
        await pilot.pause()
        assert lines(quiet) == lines(plain)
        assert quiet.cursor_row == plain.cursor_row == 26
