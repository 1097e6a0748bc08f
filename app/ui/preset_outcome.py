"""What the preset screens say after a write: one wording for the editor and the model files screen."""

from __future__ import annotations

from rich.text import Text

from app.services.preset_store import PresetResult
from app.ui.format import BAD


def conflict_head(*choices: tuple[str, str]) -> Text:
    """The file changed since it was read; `choices` are (key, what it does) pairs shown after the headline."""
    parts: list[tuple[str, str]] = [
        ("The file changed on disk since it was read; nothing was written.\n", f"bold {BAD}"),
        ("What changed there is below. ", ""),
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
