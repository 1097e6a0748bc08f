"""The dashboard's actions: what the keys do to the fleet, each Fleet command awaited in a worker.

A mixin of DashboardScreen (dashboard/screen.py), which owns the layout, the selection and what is painted; the members
named under TYPE_CHECKING are that screen's.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from rich.text import Text

from app.services.core.errors import HerdError
from app.services.core.textsafe import visible
from app.ui.screens.confirm import ConfirmScreen
from app.ui.screens.help import HelpScreen
from app.ui.screens.history import HistoryScreen
from app.ui.screens.model_files import ModelFilesScreen
from app.ui.screens.preset_form import PresetForm
from app.ui.text.format import DIM

if TYPE_CHECKING:
    from textual.app import App

    from app.ui.dashboard.action_feedback import ActionNotices
    from app.ui.dashboard.failure_history import FailureLink
    from app.ui.dashboard.fit_verdicts import FitAdvisor
    from app.ui.dashboard.log_panel import LogPanel
    from app.ui.dashboard.machines_pane import MachinesPane
    from app.ui.dashboard.repeat_failures import RepeatedFailures
    from app.ui.screens.help import HelpRow
    from app.ui.state.app_protocol import HerdApi

ATTACH_ONLY = "{} is attach-only: its preset file belongs to whoever runs that router"


class DashboardActions:
    if TYPE_CHECKING:
        selected_machine: str
        fit: FitAdvisor
        notices: ActionNotices
        failure_link: FailureLink
        repeated_failures: RepeatedFailures

        app: App[object]

        @property
        def herd(self) -> HerdApi: ...
        @property
        def logs(self) -> LogPanel: ...
        @property
        def machines(self) -> MachinesPane: ...
        def target(self) -> tuple[str, str | None] | None: ...
        def select_machine(self, name: str) -> None: ...
        def notify_error(self, message: str, title: str, machine: str = "", model: str = "") -> None: ...
        def _paint_hint(self) -> None: ...
        def binding_rows(self) -> list[HelpRow]: ...

    def load(self, machine: str, model: str) -> None:
        self.herd.notify(self.notices.began("load", machine, model), timeout=3, markup=False)
        self.repeated_failures.forget(machine, model)  # its answer is toasted, however recent the last failure
        self._fleet_call(f"load {model} on {machine}", machine, model, lambda: self.herd.fleet.load(machine, model))

    def unload(self, machine: str, model: str) -> None:
        self.herd.notify(self.notices.began("unload", machine, model), timeout=3, markup=False)
        self.repeated_failures.forget(machine, model)  # its answer is toasted, however recent the last failure
        self._fleet_call(f"unload {model} on {machine}", machine, model, lambda: self.herd.fleet.unload(machine, model))

    def action_load(self) -> None:
        target = self.target()
        if target and target[1]:
            self.fit.load_asking(target[0], target[1], self.load)  # asks first when it will not fit or evicts

    def action_unload(self) -> None:
        target = self.target()
        if target and target[1]:
            self.unload(target[0], target[1])

    def action_reload(self) -> None:
        target = self.target()
        if target:
            m = target[0]
            self._fleet_call(
                f"reload presets on {m}", m, None, lambda: self.herd.fleet.reload(m), done=f"presets reloaded on {m}"
            )

    def action_start_router(self) -> None:
        target = self.target()
        if target:
            m = target[0]
            self._fleet_call(f"start the router on {m}", m, None, lambda: self.herd.fleet.start_router(m))

    def action_stop_router(self) -> None:
        target = self.target()
        if not target:
            return
        machine = target[0]
        running = self.herd.state.get(machine).running_models()
        body = Text.assemble(("Stop the router on ", ""), (visible(machine), "bold"), "?\n\n")
        if running:
            body.append("These models will be unloaded:\n")
            for name in running:
                body.append(f"  {self.herd.glyphs.loaded} {visible(name)}\n", style="bold")
        else:
            body.append("No model is loaded there.\n", style=DIM)

        def answered(yes: bool | None) -> None:
            if yes:
                self._fleet_call(
                    f"stop the router on {machine}", machine, None, lambda: self.herd.fleet.stop_router(machine)
                )

        self.app.push_screen(ConfirmScreen(f"stop router: {machine}", body, yes="Stop"), answered)

    def action_goto_log(self) -> None:
        target = self.target()
        if not target:
            return
        machine, model = target
        if machine != self.selected_machine:
            self.select_machine(machine)
        self.logs.current_model = model
        self.logs.show_model(model)
        self.logs.following = True
        self.logs.focus()

    def action_edit_preset(self) -> None:
        target = self.target()
        if target and target[1]:
            self.edit_preset(target[0], target[1])

    def action_edit_global_preset(self) -> None:
        target = self.target()
        if target:
            self.edit_preset(target[0], "*")

    def _files_offered(self, machine: str) -> bool:
        """Whether a screen on the machine's files may open; says why not when it is the router's owner."""
        if not self.herd.fleet.has_files:
            return False  # a fleet without files: its keys are dimmed already
        if not self.herd.state.get(machine).view.managed:
            self.herd.notify(ATTACH_ONLY.format(machine), severity="warning", markup=False)
            return False
        return True

    def edit_preset(self, machine: str, section: str) -> None:
        """The preset editor on one section; it notifies the outcome itself and dismisses with the PresetResult."""
        if self._files_offered(machine):
            self.app.push_screen(PresetForm(self.herd.fleet, machine, section))

    def action_model_files(self) -> None:
        """The machine's *.gguf files; adding one writes its preset section (the screen notifies the outcome)."""
        target = self.target()
        if target and self._files_offered(target[0]):
            self.app.push_screen(ModelFilesScreen(self.herd.fleet, target[0]))

    def action_history(self) -> None:
        query = self.failure_link.query(time.monotonic())  # just after a model's failure: that model's history
        self.app.push_screen(HistoryScreen(self.herd.history, self.herd.now, query))

    def action_help(self) -> None:
        hint = str(self.herd.config_path) if self.herd.config_path else "config.toml"
        self.app.push_screen(HelpScreen(self.binding_rows(), hint))

    def _fleet_call(
        self, what: str, machine: str, model: str | None, call: Callable[[], Awaitable[object]], done: str = ""
    ) -> None:
        self.herd.hands.touched(machine)  # a scenario playing beside the operator leaves this machine alone

        async def run() -> None:
            try:
                await call()
            except HerdError as e:
                if model is not None:
                    self.notices.refused(machine, model)
                self.herd.state.note_problem(machine, f"{what}: {e}", model, action=what, error=e)
                self.machines.update_machine(self.herd.state.get(machine))
                self._paint_hint()
                self.notify_error(str(e), f"could not {what}", machine)
                return
            if done:
                self.herd.notify(done, timeout=4, markup=False)

        self.app.run_worker(run(), name=what, group=f"fleet-call:{machine}", exit_on_error=False)
