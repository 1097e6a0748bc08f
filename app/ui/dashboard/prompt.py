"""The one-line prompt under the panes, shared by the table filter, the log search (like a pager's `/`) and `:`
commands (whose last word Tab completes, shown greyed ahead of the cursor as it is typed)."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.message import Message
from textual.suggester import Suggester
from textual.widgets import Input

Completer = Callable[[str], str | None]


class _AskCompleter(Suggester):
    """Textual's suggester over the prompt's completer of the moment (names change: nothing cached)."""

    def __init__(self, prompt: Prompt) -> None:
        super().__init__(use_cache=False, case_sensitive=True)
        self.prompt = prompt

    async def get_suggestion(self, value: str) -> str | None:
        complete = self.prompt.completer
        return complete(value) if complete is not None else None


class Prompt(Input):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="prompt_cancel"),
        Binding("tab", "complete", "Complete", show=False, id="prompt_complete"),
    ]

    class Cancelled(Message):
        pass

    def __init__(self, id: str | None = None) -> None:
        super().__init__(id=id)
        self.target = ""
        self.before = ""
        self.completer: Completer | None = None
        self.suggester = _AskCompleter(self)

    def ask(self, target: str, label: str, value: str, completer: Completer | None = None) -> None:
        self.completer = completer
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

    def action_complete(self) -> None:
        """Tab: take the greyed completion (and offer the next word's); without a completer, the next pane."""
        if self.completer is None:
            self.screen.focus_next()
            return
        done = self.completer(self.value)
        if done is not None and done != self.value:
            self.value = done + " "
            self.cursor_position = len(self.value)
