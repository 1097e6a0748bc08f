"""The machines pane: one card per machine (dashboard/machine_card.py) in a scrolling column, the selected one
marked; up/down, j/k or a click picks the machine the other panes show.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar, TypeAlias

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.reactive import reactive
from textual.widgets import Static

from app.ui.dashboard.machine_card import MachineCard
from app.ui.state.herd_state import MachineState
from app.ui.text.glyphs import Glyphs
from app.ui.text.plain_text import safe_text


class MachinesPane(VerticalScroll, can_focus=True):
    """The list of machine cards; up/down (or j/k, or a click) picks the machine the other panes show.

    Below the cards, a hint when there is something to say that a card cannot: when a start was refused for want
    of llama-server, how to get one.
    """

    DEFAULT_CSS = """
    MachinesPane #machines-hint { height: auto; padding: 1 1 0 1; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "move(-1)", "Prev machine", show=False, id="machine_prev"),
        Binding("down,j", "move(1)", "Next machine", show=False, id="machine_next"),
    ]

    Picked: TypeAlias = MachineCard.Picked

    selected: reactive[str] = reactive("", init=False)

    def __init__(
        self, states: list[MachineState], glyphs: Glyphs, clock: Callable[[], float], id: str | None = None
    ) -> None:
        super().__init__(id=id)
        self._cards = {s.view.name: MachineCard(s, glyphs, clock) for s in states}
        widest = max((len(n) for n in self._cards), default=0)
        for card in self._cards.values():
            card.name_width = widest
        self.border_title = "machines"
        self._hint = Static(id="machines-hint")
        self._hint.display = False
        self._hint_text = Text()

    def compose(self) -> ComposeResult:
        yield from self._cards.values()
        yield self._hint

    @property
    def hint(self) -> Text:
        return self._hint_text

    def set_hint(self, text: Text) -> None:
        """Say `text` below the cards (nothing when empty); repainted only when it changed."""
        if text == self._hint_text:
            return
        self._hint_text = text
        self._hint.update(safe_text(text, multiline=True))
        self._hint.display = bool(text.plain)

    @property
    def names(self) -> list[str]:
        return list(self._cards)

    def card(self, name: str) -> MachineCard:
        return self._cards[name]

    def update_machine(self, state: MachineState) -> None:
        card = self._cards.get(state.view.name)
        if card is not None:
            card.update_state(state)

    def tick(self) -> None:
        for card in self._cards.values():
            card.tick()

    def watch_selected(self, name: str) -> None:
        for n, card in self._cards.items():
            card.selected = n == name
            if n == name:
                # After the card's new height is laid out (the selected card of a machine that is down is taller).
                self.call_after_refresh(self.scroll_to_widget, card, animate=False)

    def action_move(self, step: int) -> None:
        names = self.names
        if not names:
            return
        i = names.index(self.selected) if self.selected in names else 0
        self.post_message(self.Picked(names[(i + step) % len(names)]))
