"""The [keymap] table config.py checks at load (app/keymap_ids.py) is the UI's bindings: same ids, same keys."""

from __future__ import annotations

import importlib

from textual.binding import Binding

from app.keymap_ids import DEFAULT_KEYS

# Where each scope's bindings live in the UI.
SOURCES: dict[str, list[tuple[str, str | None]]] = {
    "dashboard": [
        ("app.ui.dashboard.keys", None),
        ("app.ui.dashboard.log_panel", "LogPanel"),
        ("app.ui.dashboard.machines_pane", "MachinesPane"),
        ("app.ui.dashboard.prompt", "Prompt"),
        ("app.ui.dashboard.keyed_model_table", "KeyedTable"),
    ],
    "history": [("app.ui.screens.history", "HistoryScreen")],
    "model_files": [("app.ui.screens.model_files", "ModelFilesScreen")],
    "preset_form": [("app.ui.screens.preset_form", "PresetForm")],
    "confirm": [("app.ui.screens.confirm", "ConfirmScreen")],
    "help": [("app.ui.screens.help", "HelpScreen")],
    "ask": [("app.ui.screens.ask", "AskScreen")],
    "hub": [("app.ui.screens.hub", "HubScreen")],
    "image_picker": [("app.ui.screens.ask_image_picker", "ImagePicker")],
    "add_machine": [("app.ui.screens.add_machine", "AddMachineScreen")],
    "model_detail": [("app.ui.screens.model_detail", "ModelDetailScreen")],
}


def ui_bindings(scope: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for module, cls in SOURCES[scope]:
        mod = importlib.import_module(module)
        bindings: list[object] = list(mod.BINDINGS if cls is None else getattr(mod, cls).BINDINGS)
        found.update({b.id: b.key for b in bindings if isinstance(b, Binding) and b.id})
    return found


def test_every_ui_binding_id_is_in_the_keymap_table_with_its_keys() -> None:
    for scope, ids in DEFAULT_KEYS.items():
        assert ui_bindings(scope) == ids, scope


def test_no_binding_anywhere_in_the_ui_has_an_id_the_table_lacks() -> None:
    """A new screen's bindings (hub, ask ...) need their scope here, or config.py refuses a [keymap] for them."""
    import re
    from pathlib import Path

    from app.keymap_ids import BINDING_IDS

    ui = Path(importlib.import_module("app.ui").__file__ or "").parent
    ids = {m for f in ui.rglob("*.py") for m in re.findall(r'Binding\([^)]*\bid=f?"([a-z_{}]+)"', f.read_text())}
    ids = {i for i in ids if "{" not in i} | {f"machine_{n}" for n in range(1, 10)}
    assert ids - BINDING_IDS == set()
