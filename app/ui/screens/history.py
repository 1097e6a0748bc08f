"""The history screen (key h): every recorded transition of the fleet, newest first, with why; filterable.

The filter takes words: `machine=NAME`, `model=NAME` and `reason=WORDS` match that column (reason by its start,
so `reason=preset` finds "preset reload"); any other word must appear somewhere in the row. Everything shown is
outside text (model ids, router log detail) and is shown as plain text.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Input, Static

from app.services.history.store import HistoryRow, HistoryStore
from app.ui.text.format import DIM
from app.ui.text.plain_text import plain

SHOWN_SPAN = 7 * 86400.0  # the screen shows the last week
SHOWN_ROWS = 2000
COLUMNS = ("when", "machine", "model", "change", "reason", "detail")
_REASON_STYLE = {
    "crashed": "bold red",
    "evicted": "yellow",
    "preset reload": "cyan",
    "router exited": "bold red",
    "not answering": "bold red",
    "answering again": "green",
}


def matches(r: HistoryRow, query: str) -> bool:
    """Whether a row passes the filter words (see the module's docstring)."""
    for word in query.lower().split():
        col, eq, want = word.partition("=")
        if eq and col in ("machine", "model"):
            if getattr(r, col).lower() != want:
                return False
        elif eq and col == "reason":
            if not r.reason.lower().replace(" ", "-").startswith(want) and not r.reason.lower().startswith(want):
                return False
        elif word not in f"{r.machine} {r.model} {r.reason} {r.detail} {r.from_state} {r.to_state}".lower():
            return False
    return True


def ago(seconds: float) -> str:
    s = max(0, int(seconds))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= size:
            return f"{s // size}{unit} ago"
    return f"{s}s ago"


def cells(r: HistoryRow, now: float) -> tuple[Text, ...]:
    when = time.strftime("%m-%d %H:%M:%S", time.localtime(r.time))
    return (
        Text.assemble((when, ""), (f"  {ago(now - r.time)}", DIM)),
        plain(r.machine),
        plain(r.model or "(router)", "" if r.model else DIM),
        plain(f"{r.from_state} -> {r.to_state}"),
        plain(r.reason, _REASON_STYLE.get(r.reason, "bold" if r.reason == "requested" else "")),
        plain(r.detail, DIM),
    )


class HistoryScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,h", "close", "Close", id="history_close"),
        Binding("slash", "filter", "Filter", id="history_filter"),
        Binding("ctrl+r", "refresh", "Refresh", id="history_refresh"),
    ]

    def __init__(self, store: HistoryStore | None, now: Callable[[], float], query: str = "") -> None:
        super().__init__()
        self.store = store
        self.now = now
        self.query_text = query
        self.rows: list[HistoryRow] = []
        self.shown: list[HistoryRow] = []
        """The rows in the table, in its order (the detail line shows the highlighted one)."""

    def compose(self) -> ComposeResult:
        with Vertical(id="history-box"):
            yield Input(self.query_text, placeholder="filter: machine=NAME model=NAME reason=evicted, or any words",
                        id="history-filter")  # fmt: skip
            table: DataTable[Text] = DataTable(id="history-table", cursor_type="row")
            yield table
            # The highlighted row in full, wrapped: a detail cut at the table's edge ("least recently used, for")
            # was readable only by scrolling right.
            yield Static("", id="history-detail")
            yield Static(Text("/ filter   ctrl+r refresh   esc closes", DIM), id="history-hint")

    def on_mount(self) -> None:
        box = self.query_one("#history-box", Vertical)
        box.border_title = "history"
        table: DataTable[Text] = self.query_one("#history-table", DataTable)
        for c in COLUMNS:
            table.add_column(c, key=c)
        table.focus()
        self.load()

    @work(group="history-load", exclusive=True, exit_on_error=False)
    async def load(self) -> None:
        if self.store is None:
            self.show_rows([], "no history here (the dashboard records it when it runs on a real fleet)")
            return
        try:
            rows = await self.store.query(since=self.now() - SHOWN_SPAN, limit=SHOWN_ROWS)
        except Exception as e:
            self.show_rows([], f"the history could not be read: {e}")
            return
        rows.reverse()  # newest first
        self.rows = rows
        self.refill()

    def refill(self) -> None:
        shown = [r for r in self.rows if matches(r, self.query_text)]
        note = f"{len(shown)} of {len(self.rows)} transitions in the last 7 days"
        if not self.rows:
            note = "no transitions recorded in the last 7 days"
        self.show_rows(shown, note)

    def show_rows(self, rows: Sequence[HistoryRow], note: str) -> None:
        table: DataTable[Text] = self.query_one("#history-table", DataTable)
        table.clear()
        now = self.now()
        self.shown = list(rows)
        for r in rows:
            table.add_row(*cells(r, now))
        self._show_detail(0)
        self.query_one("#history-hint", Static).update(
            Text.assemble(plain(note), ("   / filter   ctrl+r refresh   esc closes", DIM))
        )

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_detail(event.cursor_row)

    def _show_detail(self, index: int) -> None:
        detail = self.query_one("#history-detail", Static)
        if not 0 <= index < len(self.shown):
            detail.update("")
            return
        r = self.shown[index]
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.time))
        what = f"{when}  {r.machine}  {r.model or '(router)'}  {r.from_state} -> {r.to_state}  {r.reason}"
        detail.update(Text.assemble(plain(what, "bold"), *((": ", ""), plain(r.detail)) if r.detail else ()))

    def on_input_changed(self, event: Input.Changed) -> None:
        self.query_text = event.value
        self.refill()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.query_one("#history-table", DataTable).focus()

    def action_filter(self) -> None:
        self.query_one("#history-filter", Input).focus()

    def action_refresh(self) -> None:
        self.load()

    def action_close(self) -> None:
        self.dismiss(None)
