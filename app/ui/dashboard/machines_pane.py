"""The machines pane: one card per machine (dashboard/machine_card.py) in a scrolling column, the selected one
marked; up/down, j/k or a click picks the machine the other panes show.

Compact, a fleet too large for cards: one line per machine in a grid across the screen's width, and the selected
machine's full card (its reasons in full, uptime, stats) under the grid, right above the table. The dashboard
picks it when the cards do not fit (or the operator with `c`); "problems first" orders machines by trouble.
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
from app.ui.dashboard.machine_trouble import problems_first
from app.ui.state.herd_state import MachineState
from app.ui.text.glyphs import Glyphs
from app.ui.text.plain_text import safe_text

COMPACT_CELL = 39  # a compact line's width in the grid, its gutter included: four across a 160-column screen


class MachinesPane(VerticalScroll, can_focus=True):
    """The list of machine cards; up/down (or j/k, or a click) picks the machine the other panes show.

    Below the cards, a hint when there is something to say that a card cannot: when a start was refused for want
    of llama-server, how to get one.
    """

    DEFAULT_CSS = """
    MachinesPane #machines-hint { height: auto; padding: 1 1 0 1; }
    MachinesPane.-compact { layout: grid; grid-gutter: 0 1; grid-rows: 1; }
    MachinesPane.-compact #machines-hint { padding: 0 1; }
    MachinesPane #machines-detail { dock: bottom; display: none; background: $accent 10%; }
    MachinesPane.-compact #machines-detail { display: block; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "move(-1)", "Prev machine", show=False, id="machine_prev"),
        Binding("down,j", "move(1)", "Next machine", show=False, id="machine_next"),
    ]

    Picked: TypeAlias = MachineCard.Picked

    selected: reactive[str] = reactive("", init=False)
    compact: reactive[bool] = reactive(False, init=False)
    problems_first: reactive[bool] = reactive(False, init=False)

    def __init__(
        self, states: list[MachineState], glyphs: Glyphs, clock: Callable[[], float], id: str | None = None
    ) -> None:
        super().__init__(id=id)
        self.glyphs, self.clock = glyphs, clock
        self._cards = {s.view.name: MachineCard(s, glyphs, clock) for s in states}
        widest = max((len(n) for n in self._cards), default=0)
        for card in self._cards.values():
            card.name_width = widest
        self.border_title = "machines"
        self._hint = Static(id="machines-hint")
        self._hint.display = False
        self._hint_text = Text()
        self._order = list(self._cards)  # as configured; "problems first" sorts it
        first = states[0] if states else None
        # The selected machine's full card, under the compact grid (hidden with cards: each says it all itself).
        self._detail = MachineCard(first, glyphs, clock) if first is not None else None
        if self._detail is not None:
            self._detail.id = "machines-detail"
            self._detail.selected = True
            self._detail.name_width = widest

    def compose(self) -> ComposeResult:
        yield from self._cards.values()
        yield self._hint
        if self._detail is not None:
            yield self._detail

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
        """The machines in the order they are shown."""
        return list(self._order)

    def card(self, name: str) -> MachineCard:
        return self._cards[name]

    def add_card(self, state: MachineState) -> None:
        """A machine added while running: its card, last, as if configured so."""
        name = state.view.name
        if name in self._cards:
            return
        card = self._cards[name] = MachineCard(state, self.glyphs, self.clock)
        card.compact = self.compact
        widest = max(len(n) for n in self._cards)
        for c in (*self._cards.values(), *([self._detail] if self._detail else [])):
            if c.name_width != widest:  # a longer name: every line is padded to it again
                c.name_width = widest
                c.update_state(c.state)
        self.mount(card, before=self._hint)
        self._order.append(name)
        self.resort()

    def update_machine(self, state: MachineState) -> None:
        card = self._cards.get(state.view.name)
        if card is not None:
            card.update_state(state)
            if self._detail is not None and state.view.name == self.selected:
                self._detail.update_state(state)

    def tick(self) -> None:
        for card in self._cards.values():
            card.tick()
        if self._detail is not None and self.compact:
            self._detail.tick()

    def watch_selected(self, name: str) -> None:
        for n, card in self._cards.items():
            card.selected = n == name
            if n == name:
                if self._detail is not None:
                    self._detail.update_state(card.state)
                # After the card's new height is laid out (the selected card of a machine that is down is taller).
                self.call_after_refresh(self.scroll_to_widget, card, animate=False)

    # ---- compact, and problems first ----

    def watch_compact(self, value: bool) -> None:
        self.set_class(value, "-compact")
        for card in self._cards.values():
            card.compact = value
        self._set_columns()
        self._say_mode()

    def on_resize(self) -> None:
        self._set_columns()

    def _set_columns(self) -> None:
        """As many compact lines side by side as the width holds (one column of cards otherwise)."""
        cols = max(1, (self.scrollable_content_region.width + 1) // COMPACT_CELL) if self.compact else 1
        if self.styles.grid_size_columns != cols:
            self.styles.grid_size_columns = cols
            self._hint.styles.column_span = cols

    def cards_height(self, width: int) -> int:
        """How many lines the cards take in one column of `width` (the pane without compact lines)."""
        return sum(card.height_as_card(width) for card in self._cards.values())

    def watch_problems_first(self) -> None:
        self.resort()
        self._say_mode()

    def resort(self) -> None:
        """Put the machines in the order asked: the worst trouble first, or as configured. Moved only when the
        order changes, so a stats round moves nothing."""
        states = [self._cards[n].state for n in self._cards]
        order = problems_first(states) if self.problems_first else list(self._cards)
        if order == self._order:
            return
        self._order = order
        for name in order:
            self.move_child(self._cards[name], before=self._hint)

    def _say_mode(self) -> None:
        modes = [m for m, on in (("compact", self.compact), ("problems first", self.problems_first)) if on]
        self.border_subtitle = " · ".join(modes)

    def action_move(self, step: int) -> None:
        names = self.names
        if not names:
            return
        i = names.index(self.selected) if self.selected in names else 0
        self.post_message(self.Picked(names[(i + step) % len(names)]))
