"""What the dashboard's keys do to the fleet: each Fleet command awaited in a worker, and the editors of a machine's
preset and model files.

The dashboard screen (dashboard/screen.py) holds one FleetActions and says which machine and model a key applies to;
what a refused command repaints is the screen's too, handed in as `refused`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, cast

from rich.text import Text

from app.services.core.errors import HerdError
from app.services.core.textsafe import visible
from app.ui.screens.confirm import ConfirmScreen
from app.ui.screens.model_files import ModelFilesScreen
from app.ui.screens.preset_form import PresetForm
from app.ui.text.format import DIM

if TYPE_CHECKING:
    from textual.app import App
    from textual.worker import WorkType

    from app.ui.dashboard.action_feedback import ActionNotices
    from app.ui.dashboard.repeat_failures import RepeatedFailures
    from app.ui.state.app_protocol import HerdApi

ATTACH_ONLY = "{} is attach-only: its preset file belongs to whoever runs that router"


class FleetActions:
    def __init__(
        self,
        app: Callable[[], App[Any]],
        notices: ActionNotices,
        repeated_failures: RepeatedFailures,
        refused: Callable[[str, str, HerdError], None],
    ) -> None:
        self._app = app  # a callable: the screen that holds this is built before it has an app
        self._notices = notices
        self._repeated_failures = repeated_failures
        self._refused = refused
        """Told (machine, what, error) once a refusal is noted in HerdState: the screen repaints and toasts it."""

    def _herd(self) -> HerdApi:
        return cast("HerdApi", self._app())

    def load(self, machine: str, model: str) -> None:
        herd = self._herd()
        herd.notify(self._notices.began("load", machine, model), timeout=3, markup=False)
        self._repeated_failures.forget(machine, model)  # its answer is toasted, however recent the last failure
        self._fleet_call(f"load {model} on {machine}", machine, model, lambda: herd.fleet.load(machine, model))

    def unload(self, machine: str, model: str) -> None:
        herd = self._herd()
        herd.notify(self._notices.began("unload", machine, model), timeout=3, markup=False)
        self._repeated_failures.forget(machine, model)  # its answer is toasted, however recent the last failure
        self._fleet_call(f"unload {model} on {machine}", machine, model, lambda: herd.fleet.unload(machine, model))

    def reload(self, machine: str) -> None:
        herd = self._herd()
        done = f"presets reloaded on {machine}"
        self._fleet_call(f"reload presets on {machine}", machine, None, lambda: herd.fleet.reload(machine), done=done)

    def start_router(self, machine: str) -> None:
        herd = self._herd()
        self._fleet_call(f"start the router on {machine}", machine, None, lambda: herd.fleet.start_router(machine))

    def stop_router(self, machine: str) -> None:
        """Asks first, naming the models the stop unloads."""
        herd = self._herd()
        running = herd.state.get(machine).running_models()
        body = Text.assemble(("Stop the router on ", ""), (visible(machine), "bold"), "?\n\n")
        if running:
            body.append("These models will be unloaded:\n")
            for name in running:
                body.append(f"  {herd.glyphs.loaded} {visible(name)}\n", style="bold")
        else:
            body.append("No model is loaded there.\n", style=DIM)

        def answered(yes: bool | None) -> None:
            if yes:
                self.stop_router_now(machine)

        self._app().push_screen(ConfirmScreen(f"stop router: {machine}", body, yes="Stop"), answered)

    def stop_router_now(self, machine: str) -> None:
        """Without asking: for a caller that asked already (a bulk stop names every router in one question)."""
        herd = self._herd()
        self._fleet_call(f"stop the router on {machine}", machine, None, lambda: herd.fleet.stop_router(machine))

    def _files_offered(self, machine: str) -> bool:
        """Whether a screen on the machine's files may open; says why not when it is the router's owner."""
        herd = self._herd()
        if not herd.fleet.has_files:
            return False  # a fleet without files: its keys are dimmed already
        if not herd.state.get(machine).view.managed:
            herd.notify(ATTACH_ONLY.format(machine), severity="warning", markup=False)
            return False
        return True

    def edit_preset(self, machine: str, section: str) -> None:
        """The preset editor on one section; it notifies the outcome itself and dismisses with the PresetResult."""
        if self._files_offered(machine):
            self._app().push_screen(PresetForm(self._herd().fleet, machine, section))

    def model_files(self, machine: str) -> None:
        """The machine's *.gguf files; adding one writes its preset section (the screen notifies the outcome)."""
        if self._files_offered(machine):
            self._app().push_screen(ModelFilesScreen(self._herd().fleet, machine))

    def _fleet_call(
        self, what: str, machine: str, model: str | None, call: Callable[[], Awaitable[object]], done: str = ""
    ) -> None:
        herd = self._herd()
        herd.hands.touched(machine)  # a scenario playing beside the operator leaves this machine alone

        async def run() -> None:
            try:
                await call()
            except HerdError as e:
                if model is not None:
                    self._notices.refused(machine, model)
                herd.state.note_problem(machine, f"{what}: {e}", model, action=what, error=e)
                self._refused(machine, what, e)
                return
            if done:
                herd.notify(done, timeout=4, markup=False)

        # the function, not run(): a worker cancelled before it ran (a key, then `q`) would leave a coroutine unawaited
        self._app().run_worker(
            cast("WorkType[None]", run), name=what, group=f"fleet-call:{machine}", exit_on_error=False
        )
