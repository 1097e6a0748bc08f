"""The help screen: every binding with the key it is on now (after [keymap]) and the id that rebinds it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from app.services.core.textsafe import visible
from app.ui.text.format import DIM
from app.ui.text.plain_text import plain


@dataclass(frozen=True)
class HelpRow:
    where: str
    key: str
    id: str
    description: str


ALIAS_ROW_ID = "alias"
"""The id column of a row that lists an alias of `[aliases]` rather than a key."""

HELP_COLUMNS = (("key", "key"), ("id", "id"), ("does", "description"), ("where", "where"))
MIN_DOES_WIDTH = 12
HELP_BOX_WIDTH = 104  # #help-box in app.tcss


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "dismiss_help", "Close", id="help_close"),
    ]

    def __init__(self, rows: Sequence[HelpRow], config_hint: str) -> None:
        super().__init__()
        self.rows = list(rows)
        self.config_hint = config_hint
        self._widths: list[int] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="help-box"):
            table: DataTable[Text] = DataTable(id="help-table", cursor_type="row", show_cursor=False)
            yield table
            yield Static(
                Text.assemble(
                    ("Rebind by id in ", DIM),
                    (visible(self.config_hint), "bold"),
                    (" under [keymap], e.g. ", DIM),
                    ('load = "ctrl+l"', "bold"),
                    (".  ", DIM),
                    (f"{self._counted()}: up, down, PgUp, PgDn scroll", "bold"),
                    (", esc closes.", DIM),
                ),
                id="help-hint",
            )

    def _counted(self) -> str:
        """What the list holds: keys, and the config's `:` aliases apart (an alias is no key)."""
        aliases = sum(1 for r in self.rows if r.id == ALIAS_ROW_ID)
        keys = f"{len(self.rows) - aliases} keys"
        return f"{keys} and {aliases} alias{'es' if aliases != 1 else ''}" if aliases else keys

    def on_mount(self) -> None:
        box = self.query_one("#help-box", Vertical)
        box.border_title = "keys"
        self.query_one("#help-table", DataTable).focus()
        self.fill()  # the rows are there at once; widths are refined once the table has its size
        self.call_after_refresh(self.fill)

    def on_resize(self) -> None:
        self.call_after_refresh(self.fill)

    def fill(self) -> None:
        """(Re)build the rows for the table's width now: key, id and where as wide as their longest entry, the
        description gets the rest and wraps (a cut description read "(asks" and "everywher")."""
        table: DataTable[Text] = self.query_one("#help-table", DataTable)
        # Before the first layout: the box's CSS width (104 less border and padding), at most the screen's.
        width = table.size.width or min(HELP_BOX_WIDTH, self.app.size.width) - 4
        inner = width - table.styles.scrollbar_size_vertical
        widths = [max(len(h), *(len(getattr(r, f)) for r in self.rows)) for h, f in HELP_COLUMNS]
        gaps = 2 * table.cell_padding * len(HELP_COLUMNS)
        widths[2] = max(inner - gaps - (sum(widths) - widths[2]), MIN_DOES_WIDTH)  # "does": what is left
        if (table.row_count, self._widths) == (len(self.rows), widths):
            return
        self._widths = widths
        table.clear(columns=True)
        for (header, field), col_width in zip(HELP_COLUMNS, widths, strict=True):
            table.add_column(header, key=field, width=col_width)
        last = ""
        for r in self.rows:
            where = r.where if r.where != last else ""  # a group's name once, on its first row
            last = r.where
            # keys come from the config's [keymap]: outside text like any other
            cells = (plain(r.key, "bold"), Text(r.id, style="cyan"), Text(r.description), Text(where, DIM))
            table.add_row(*cells, height=None)

    def action_dismiss_help(self) -> None:
        self.dismiss(None)
