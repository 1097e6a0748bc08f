"""The one-line prompt under the panes, shared by the table filter and the log search (like a pager's `/`)."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Input


class Prompt(Input):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="prompt_cancel"),
    ]

    class Cancelled(Message):
        pass

    def __init__(self, id: str | None = None) -> None:
        super().__init__(id=id)
        self.target = ""
        self.before = ""

    def ask(self, target: str, label: str, value: str) -> None:
        self.target = target
        self.before = value
        self.placeholder = label
        self.border_title = label
        self.value = value
        self.display = True
        self.focus()
        self.cursor_position = len(value)

    def action_cancel(self) -> None:
        self.post_message(self.Cancelled())
