"""`a` on a model row: the ask pane for that model. A model that is not running is loaded first only when the
operator agrees, told what the load evicts (the fit preview), since a question would otherwise load it unseen."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text

from app.services.ask.vision import is_projector, vision_of
from app.services.core.textsafe import visible
from app.ui.screens.ask import AskFleet, AskScreen
from app.ui.screens.confirm import ConfirmScreen

NOT_ANSWERING = "not answering"
"""Beside a loaded model's status when its child stopped answering (services/activity/answering.py)."""

if TYPE_CHECKING:
    from textual.app import App

    from app.ui.dashboard.fit_verdicts import FitAdvisor
    from app.ui.state.app_protocol import HerdApi


def open_ask(app: App[Any], herd: HerdApi, fit: FitAdvisor, machine: str, model: str) -> None:
    fleet = herd.fleet
    if not isinstance(fleet, AskFleet):
        herd.notify("asking is not offered by this fleet", severity="warning", markup=False)
        return
    if is_projector(model):
        herd.notify(visible(f"{model} is a projector (mmproj): not a model to talk to"), markup=False)
        return
    info = herd.state.get(machine).by_id.get(model)
    vision = vision_of(info)
    if info is not None and info.state.running:
        app.push_screen(AskScreen(fleet, machine, model, vision))
        return
    state = info.state.value if info is not None else "not listed"
    body = Text(visible(f"{model} is {state} on {machine}: asking loads it first.\n\n"))
    body.append(visible(fit.preview(machine, model).line))

    def answered(yes: bool | None) -> None:
        if yes:
            app.push_screen(AskScreen(fleet, machine, model, vision, load_first=True))

    app.push_screen(ConfirmScreen(f"ask {model}: load it first?", body, yes="Load and ask"), answered)
