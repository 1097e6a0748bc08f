"""VirtualTable paints what DataTable painted for the same cells (segments, styles and the mouse meta they carry),
focused or not, as rows change, go and come, the cursor moves and it scrolls; its caches of drawn lines and cells
stay within their bounds."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import DataTable

from app.ui.widgets.table_rows import CellSpec, Col, Row, width_of
from app.ui.widgets.virtual_table import CELL_RENDERS, LINE_RENDERS, VirtualTable
from tests.helpers.wait import wait_for

COLS = (Col("model", "model"), Col("status", "status"), Col("size", "size"))


def row(i: int, status: str = "") -> Row:
    state = status or ("unloaded" if i % 2 else "● loaded")
    style = "green" if "loaded" in state else "dim"
    return (CellSpec(f"model-{i}", "bold", i), CellSpec(state, style), CellSpec("4 GB"))


ROWS = {f"k{i}": row(i) for i in range(30)}


class Two(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.selected: list[str] = []

    def on_virtual_table_row_selected(self, event: VirtualTable.RowSelected) -> None:
        self.selected.append(event.row_key)

    def compose(self) -> ComposeResult:
        yield VirtualTable(COLS, id="virtual")
        yield DataTable[CellSpec](id="data", cursor_type="row")


def fit(t: VirtualTable) -> None:
    t.set_widths([max(len(c.label), *(width_of(r[i].text) for r in t.rows_now.values())) for i, c in enumerate(COLS)])


def lines(t: VirtualTable | DataTable[CellSpec]) -> list[list[object]]:
    return [list(t.render_line(y)) for y in range(t.size.height)]


async def test_it_paints_what_a_data_table_paints() -> None:
    app = Two()
    async with app.run_test(size=(60, 80)) as pilot:
        virtual = app.query_one(VirtualTable)
        data: DataTable[CellSpec] = app.query_one(DataTable)
        for c in COLS:
            data.add_column(c.label, key=c.key)
        for key, cells in ROWS.items():
            data.add_row(*cells, key=key)
        virtual.rows_now = dict(ROWS)
        fit(virtual)
        virtual.set_order(list(ROWS))

        async def same() -> None:
            app.set_focus(None)
            await pilot.pause()
            assert virtual.size == data.size
            assert lines(virtual) == lines(data)
            focused = []
            for t in (virtual, data):  # each focused in turn: the cursor and the header look otherwise
                t.focus()
                await pilot.pause()
                focused.append(lines(t))
            assert focused[0] == focused[1]

        await same()
        before = lines(virtual)

        virtual.rows_now["k3"] = row(3, "◐ loading 42%")
        fit(virtual)
        virtual.rows_changed(["k3"])
        data.update_cell("k3", "status", row(3, "◐ loading 42%")[1], update_width=True)
        await same()
        assert lines(virtual) != before

        for k in ("k0", "k5", "k29"):
            del virtual.rows_now[k]
            data.remove_row(k)
        virtual.set_order([k for k in virtual.order if k in virtual.rows_now])
        fit(virtual)
        await same()
        assert virtual.row_count == data.row_count == 27

        virtual.rows_now["new"] = row(99, "loading")
        virtual.set_order([*virtual.order, "new"])
        data.add_row(*row(99, "loading"), key="new")
        virtual.move_cursor(row=27)
        data.move_cursor(row=27)
        await same()
        assert virtual.cursor_row == data.cursor_row == 27 and virtual.cursor_key() == "new"

        for t in (virtual, data):
            t.focus()
            await pilot.press("up", "up")
        await same()
        assert virtual.cursor_row == data.cursor_row == 25

        for t in (virtual, data):  # shorter than their rows: scrolled by keys, the header stays
            t.styles.height = 12
        await pilot.pause()
        for keys in (("ctrl+home",), ("pagedown",), ("pagedown", "down"), ("ctrl+end", "pageup")):
            for t in (virtual, data):
                t.focus()
                await pilot.press(*keys)
            await same()
            assert virtual.cursor_row == data.cursor_row and virtual.scroll_y == data.scroll_y
        assert 0 < virtual.scroll_y < virtual.max_scroll_y


async def test_its_drawn_lines_stay_within_their_bound() -> None:
    app = Two()
    async with app.run_test(size=(60, 80)) as pilot:
        virtual = app.query_one(VirtualTable)
        virtual.rows_now = dict(ROWS)
        fit(virtual)
        order = list(ROWS)
        for i in range(40):  # each new order draws every line again under new row indices: 40 x 31 > LINE_RENDERS
            virtual.set_order(order[i % 30 :] + order[: i % 30])
            await pilot.pause()
        assert len(virtual._lines) == LINE_RENDERS, "not driven past the bound"
        for i in range(60):  # the distinct cells (~40) drawn again at new widths: 60 x 40 > CELL_RENDERS
            virtual.set_widths([12 + i] * 3)
            await pilot.pause()
        assert len(virtual._cells) == CELL_RENDERS, "not driven past the bound"
        assert len(virtual._lines) == LINE_RENDERS


async def test_a_cursor_moved_while_hidden_is_scrolled_to_once_shown() -> None:
    app = Two()
    async with app.run_test(size=(60, 80)) as pilot:
        virtual = app.query_one(VirtualTable)
        virtual.styles.height = 12
        virtual.rows_now = dict(ROWS)
        fit(virtual)
        virtual.set_order(list(ROWS))
        virtual.display = False
        await pilot.pause()
        virtual.move_cursor(row=25)  # as the fleet view's table is, before `f` shows it
        await pilot.pause()
        virtual.display = True
        await wait_for(lambda: virtual.scroll_y > 0, pilot=pilot)
        assert virtual.scroll_y <= 25 < virtual.scroll_y + 11  # the cursor's row is among the 11 shown


async def test_a_click_moves_the_cursor_and_a_second_one_selects() -> None:
    app = Two()
    selected = app.selected
    async with app.run_test(size=(60, 80)) as pilot:
        virtual = app.query_one(VirtualTable)
        virtual.rows_now = dict(ROWS)
        fit(virtual)
        virtual.set_order(list(ROWS))
        await pilot.pause()
        await pilot.click(VirtualTable, offset=(3, 4))  # the header is line 0: row 3
        assert virtual.cursor_key() == "k3" and selected == []
        await pilot.click(VirtualTable, offset=(3, 4))
        await wait_for(lambda: selected == ["k3"], pilot=pilot)
        await pilot.click(VirtualTable, offset=(3, 0))  # the header: no row
        assert virtual.cursor_key() == "k3"
