"""Where the model detail pane (screens/model_detail.py) goes: beside the tables when the screen has room, a screen
of its own when not; and the fit lines it shows, from the dashboard's FitAdvisor.

Docked, the pane follows the table's cursor and closes with `i` again, or by itself when the screen narrows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.css.query import NoMatches

from app.ui.dashboard.fit_verdicts import FitAdvisor
from app.ui.screens.model_detail import FitLines, ModelDetail, ModelDetailScreen

if TYPE_CHECKING:
    from textual.screen import Screen

    from app.ui.state.herd_state import HerdState

DOCK_FROM = 150
"""Screen columns from which the pane sits beside the tables (the table keeps ~80 of them beside it)."""
DOCK_WIDTH = 58
DOCKED_ID = "detail"


def fit_lines(fit: FitAdvisor, state: HerdState) -> FitLines:
    """For each machine that lists the model: its fit there in one line (an estimate is asked for if not known)."""

    def of(model_id: str) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for name in state.names:
            m = state.get(name).by_id.get(model_id)
            if m is None:
                continue
            if not m.state.running:
                fit.request(name, [m])  # its verdict arrives in a worker; the pane's next refresh shows it
            out.append((name, fit.preview(name, model_id).line))
        return out

    return of


def docked(screen: Screen[None]) -> ModelDetail | None:
    try:
        return screen.query_one(f"#{DOCKED_ID}", ModelDetail)
    except NoMatches:
        return None


def open_detail(screen: Screen[None], machine: str, model: str, lines: FitLines, *, toggle: bool = True) -> None:
    """Show the pane for this model: docked when the screen is wide (`toggle`: closed when already open), else as a
    screen."""
    pane = docked(screen)
    if pane is not None:
        if toggle:
            pane.remove()
        else:
            pane.show_model(machine, model)
        return
    if screen.size.width >= DOCK_FROM:
        pane = ModelDetail(lines, id=DOCKED_ID)
        pane.styles.width = DOCK_WIDTH
        pane.border_subtitle = "i closes"
        pane.show_model(machine, model)
        screen.query_one("#top").mount(pane)
    else:
        screen.app.push_screen(ModelDetailScreen(machine, model, lines))


def follow(screen: Screen[None], machine: str, model: str | None) -> None:
    """The cursor moved: a docked pane shows its model (none: it stays on the last one)."""
    pane = docked(screen)
    if pane is not None and model:
        pane.show_model(machine, model)


def fit_room(screen: Screen[None]) -> None:
    """The screen was resized: a docked pane leaves a screen too narrow for it."""
    pane = docked(screen)
    if pane is not None and screen.size.width < DOCK_FROM:
        pane.remove()
