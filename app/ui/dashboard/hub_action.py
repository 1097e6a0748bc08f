"""`p` on a machine: the hub screen for it; and a pull started from there or from the palette ("Pull REPO:QUANT on
MACHINE"), run by the app so that it outlives the screen, its outcome told in a toast."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from app.services.core.textsafe import visible
from app.ui.screens.hub import HubFleet, HubScreen, start_pull

if TYPE_CHECKING:
    from textual.app import App

    from app.ui.state.app_protocol import HerdApi


def pull(app: App[Any], herd: HerdApi, machine: str, spec: str) -> None:
    fleet = herd.fleet
    if not isinstance(fleet, HubFleet):
        herd.notify("pulling is not offered by this fleet", severity="warning", markup=False)
        return
    herd.hands.touched(machine)

    def tell(text: str, ok: bool) -> None:
        herd.notify(visible(text), severity="information" if ok else "error", timeout=8 if ok else 15, markup=False)

    start_pull(fleet, machine, spec, lambda aw: app.run_worker(aw, group="hub-pull", exit_on_error=False), tell)


def open_hub(app: App[Any], herd: HerdApi, machine: str) -> None:
    fleet = herd.fleet
    if not isinstance(fleet, HubFleet):
        herd.notify("the hub is not offered by this fleet", severity="warning", markup=False)
        return
    hub_url = herd.config.machine(machine).hub
    app.push_screen(HubScreen(fleet, machine, hub_url, lambda m, spec: pull(app, herd, m, spec)))
