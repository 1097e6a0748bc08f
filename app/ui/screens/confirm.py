"""A yes/no question in a modal, for actions that throw work away (stopping a router unloads its models)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from app.ui.text.plain_text import plain


class ConfirmScreen(ModalScreen[bool]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes", id="confirm_yes"),
        Binding("n,escape", "answer(False)", "No", id="confirm_no"),
    ]

    def __init__(self, title: str, body: Text | str, yes: str = "Yes") -> None:
        super().__init__()
        self.title_text = title
        self.body = body if isinstance(body, Text) else plain(body, multiline=True)  # names in it are not markup
        self.yes = yes

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box"):
            # A long body (every model a stop unloads) scrolls inside the box: the box never outgrows the screen,
            # which gave the screen a scrollbar, pushed the box off-centre and its title and first lines off the top.
            with VerticalScroll(id="confirm-scroll"):
                yield Static(self.body, id="confirm-body")
            with Horizontal(id="confirm-buttons"):
                yield Button(f"{self.yes} (y)", id="yes", variant="error")
                yield Button("Cancel (n)", id="no")

    def on_mount(self) -> None:
        self.query_one("#confirm-box").border_title = plain(self.title_text)
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
