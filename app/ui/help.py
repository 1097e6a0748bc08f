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

from app.services.textsafe import visible
from app.ui.format import DIM
from app.ui.plain import plain


@dataclass(frozen=True)
class HelpRow:
    where: str
    key: str
    id: str
    description: str


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "dismiss_help", "Close", id="help_close"),
    ]

    def __init__(self, rows: Sequence[HelpRow], config_hint: str) -> None:
        super().__init__()
        self.rows = list(rows)
        self.config_hint = config_hint

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
                    (".  esc closes.", DIM),
                ),
                id="help-hint",
            )

    def on_mount(self) -> None:
        box = self.query_one("#help-box", Vertical)
        box.border_title = "keys"
        table = self.query_one("#help-table", DataTable)
        table.add_column("key", key="key")
        table.add_column("id", key="id")
        table.add_column("does", key="does")
        table.add_column("where", key="where")
        last = ""
        for r in self.rows:
            where = r.where if r.where != last else ""  # a group's name once, on its first row
            last = r.where
            # keys come from the config's [keymap]: outside text like any other
            table.add_row(plain(r.key, "bold"), Text(r.id, style="cyan"), Text(r.description), Text(where, DIM))
        table.focus()

    def action_dismiss_help(self) -> None:
        self.dismiss(None)
