"""`D` on a model's row: remove a downloaded model from its machine, as `llamaherd rm` does (hub/remove.py: unload
it if it runs, the router's `DELETE /models`, then a look that its cache files are gone). Asked first, naming what
goes; a model that is not from the download cache is refused with the reason before any question (its file is the
operator's). The outcome is a toast; the Fleet writes the history row (`removed`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, cast, runtime_checkable

from rich.text import Text

from app.services.core.errors import HerdError
from app.services.core.textsafe import visible
from app.services.hub.remove import Removal, refusal
from app.ui.screens.confirm import ConfirmScreen
from app.ui.text.format import DIM

if TYPE_CHECKING:
    from textual.app import App
    from textual.worker import WorkType

    from app.ui.state.app_protocol import HerdApi


@runtime_checkable
class RemoveFleet(Protocol):
    """What removing needs of app.services.fleet.Fleet."""

    async def remove_model(self, machine: str, model: str) -> Removal: ...


def ask_remove(app: App[Any], herd: HerdApi, machine: str, model: str) -> None:
    fleet = herd.fleet
    if not isinstance(fleet, RemoveFleet):
        herd.notify("removing models is not offered by this fleet", severity="warning", markup=False)
        return
    info = herd.state.get(machine).by_id.get(model)
    if info is None:
        return
    why = refusal(machine, info)
    if why:
        herd.notify(visible(why), title="not removed", severity="warning", timeout=10, markup=False)
        return
    body = Text.assemble("Remove ", (visible(model), "bold"), " from ", (visible(machine), "bold"), "?\n\n")
    body.append("Its files in the machine's download cache are deleted; pulling it again downloads it again.\n")
    if info.state.running:
        body.append(f"It is {info.state.value} there: it is unloaded first.\n", style="bold")
    body.append("\nThe preset's own model files are never touched.", style=DIM)

    async def remove() -> None:
        try:
            done = await fleet.remove_model(machine, model)
        except HerdError as e:
            herd.notify(visible(f"rm {model} on {machine}: {e}"), severity="error", timeout=15, markup=False)
            return
        herd.notify(visible(done.line()), severity="information" if done.ok else "error", timeout=8, markup=False)

    def answered(yes: bool | None) -> None:
        if yes:
            herd.hands.touched(machine)
            # the function, not remove(): a worker cancelled before it ran would leave a coroutine unawaited
            work = cast("WorkType[None]", remove)
            app.run_worker(work, name=f"rm {model} on {machine}", group="rm", exit_on_error=False)

    app.push_screen(ConfirmScreen(f"rm: {model}", body, yes="Remove"), answered)
