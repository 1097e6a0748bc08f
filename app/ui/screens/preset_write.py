"""The write both preset screens end with, and what they say after it: one wording for the editor and the model
files screen."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from rich.text import Text
from textual.app import App
from textual.await_complete import AwaitComplete

from app.services.core.errors import HerdError, RouterError
from app.services.presets.store import Edit, PresetConflict, PresetPlan, PresetResult, PresetSnapshot
from app.ui.text.format import BAD


@runtime_checkable
class PresetFleet(Protocol):
    """What the preset screens need of app.services.fleet.Fleet."""

    async def read_preset(self, machine: str) -> PresetSnapshot: ...

    async def preset_known_keys(self, machine: str) -> frozenset[str]: ...

    async def plan_preset(self, machine: str, edit: Edit, snapshot: PresetSnapshot | None = None) -> PresetPlan: ...

    async def apply_preset(self, machine: str, plan: PresetPlan) -> PresetResult: ...


class WritingScreen(Protocol):
    """What `write_preset` needs of the screen it writes for."""

    busy: bool

    @property
    def fleet(self) -> PresetFleet: ...

    @property
    def machine(self) -> str: ...

    @property
    def app(self) -> App[object]: ...

    def dismiss(self, result: PresetResult | None = None) -> AwaitComplete: ...

    def show_conflict(self, conflict: PresetConflict) -> None: ...

    def show_error(self, message: str) -> None: ...


async def known_keys(fleet: PresetFleet, machine: str) -> tuple[frozenset[str] | None, str]:
    """The keys the machine's llama-server accepts, or None and a warning: keys are then checked for grammar only."""
    try:
        return await fleet.preset_known_keys(machine), ""
    except HerdError as e:
        return None, f"Keys are not checked against this llama-server's options: {e}"


async def write_preset(screen: WritingScreen, plan: PresetPlan, done: str) -> None:
    """Write `plan`; `done` says what that is ("Saved [x] in path").

    Written: the screen is dismissed with the result and the summary notified. Written but the router did not
    reload: dismissed with None and a warning. The file changed since it was read: the screen shows the conflict.
    Anything else: the screen shows why; nothing was written.
    """
    screen.busy = True
    try:
        result = await screen.fleet.apply_preset(screen.machine, plan)
    except PresetConflict as e:
        screen.show_conflict(e)
        return
    except RouterError as e:
        screen.app.notify(not_reloaded(done, e), title=f"preset of {screen.machine}", severity="warning", markup=False)
        screen.dismiss(None)
        return
    except HerdError as e:
        screen.show_error(f"Not written: {e}")
        return
    finally:
        screen.busy = False
    screen.app.notify(summary(done, result), title=f"preset of {screen.machine}", markup=False)
    screen.dismiss(result)


def conflict_head(*choices: tuple[str, str]) -> Text:
    """The file changed since it was read; `choices` are (key, what it does) pairs shown after the headline."""
    parts: list[tuple[str, str]] = [
        ("The file changed on disk since it was read; nothing was written.\n", f"bold {BAD}"),
        ("Below: the file on disk now (-) against your edit (+). ", ""),
    ]
    for i, (key, does) in enumerate(choices):
        parts += [(key, "bold"), (f" {does}" + (", " if i < len(choices) - 1 else "."), "")]
    return Text.assemble(*parts)


def not_reloaded(done: str, error: Exception) -> str:
    # apply asks the router only after the file is written: the change is on disk, not yet in effect
    return f"{done}, but the router did not reload: {error}. Reload its presets to apply the change."


def summary(done: str, result: PresetResult) -> str:
    parts = [f"{done}."]
    if result.backup:
        parts.append(f"Backup: {result.backup}.")
    if result.reloaded:
        unloaded = result.plan.will_unload
        parts.append("Router reloaded" + (f"; unloaded {', '.join(unloaded)}." if unloaded else "."))
    else:
        parts.append("The router is not running: it reads the file when it starts.")
    return " ".join(parts)
