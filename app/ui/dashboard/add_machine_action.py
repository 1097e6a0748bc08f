"""`+`: add a machine from the dashboard. The form (screens/add_machine.py) appends its table to config.toml; then
the fleet follows the machine at once (Fleet.add_machine), the app's config and the history's names take it in, its
card joins the pane and it is selected."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from app.config import MachineConfig
from app.errors import ConfigError
from app.services.core.textsafe import visible
from app.services.history.scope import router_scope
from app.ui.screens.add_machine import AddMachineScreen

if TYPE_CHECKING:
    from textual.app import App

    from app.ui.dashboard.machines_pane import MachinesPane
    from app.ui.state.app_protocol import HerdApi


@runtime_checkable
class MachineAdder(Protocol):
    def add_machine(self, machine: MachineConfig) -> None: ...


def open_add_machine(app: App[Any], herd: HerdApi, pane: MachinesPane, pick: Callable[[str], None]) -> None:
    fleet, path = herd.fleet, herd.config_path
    if not isinstance(fleet, MachineAdder):
        herd.notify("adding a machine is not offered by this fleet", severity="warning", markup=False)
        return
    if path is None:
        herd.notify("no config file to add a machine to (name one with --config)", severity="warning", markup=False)
        return

    def added(machine: MachineConfig | None) -> None:
        if machine is None:
            return
        try:
            fleet.add_machine(machine)
        except ConfigError as e:  # written, but a machine of that name is followed already
            later = visible(f"{machine.name} written to {path}, followed after a restart: {e}")
            herd.notify(later, severity="warning", markup=False)
            return
        # What the dashboard reads of the config (a machine's hub, ...) and the history's names for this config's
        # routers know it too, as if it had been there at the start.
        herd.config = dataclasses.replace(herd.config, machines=(*herd.config.effective_machines, machine))
        if herd.history is not None and herd.history.names is not None:
            herd.history.names[router_scope(machine)] = machine.name
        pane.add_card(herd.state.get(machine.name))
        pick(machine.name)
        herd.notify(visible(f"{machine.name} added to {path}"), timeout=6, markup=False)

    app.push_screen(AddMachineScreen(path), added)
