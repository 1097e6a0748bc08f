"""Why a key does nothing: the sentence for an action the footer shows dimmed, when its key is pressed anyway.

Whether an action applies is decided elsewhere (the footer's table); this only explains a "no", most telling reason
first: a machine llamaherd may not manage or cannot reach says so before anything about the model under the cursor.
"""

from __future__ import annotations

from app.services.core.fleet_events import MachineView
from app.services.core.host_types import Connection
from app.services.core.router_types import ModelInfo, RouterState

_NOT_OURS = {
    "start_router": "not ours to start",
    "stop_router": "not ours to stop",
    "edit_preset": "its preset belongs to whoever runs it",
    "edit_global_preset": "its preset belongs to whoever runs it",
    "model_files": "its model files belong to whoever runs it",
}
_MODEL_ACTIONS = ("load", "unload", "goto_log", "edit_preset")


def why_not(action: str, view: MachineView | None, model_id: str | None, model: ModelInfo | None) -> str:
    """The reason `action` does not apply to this machine and model now (the caller knows it does not)."""
    if view is None:
        return "no machine is selected"
    name = view.name
    if action == "model_detail":  # any listed model, whatever its machine's state
        return f"no model is selected on {name}" if not model_id else f"{model_id} is no longer listed by {name}"
    if action in _NOT_OURS and not view.managed:
        return f"{name} is attach-only: {_NOT_OURS[action]}"
    if view.connection is Connection.UNREACHABLE:
        return f"{name} is unreachable: {view.connection_reason or 'no answer'}"
    if action in ("load", "unload") and view.router_state not in (RouterState.RUNNING, RouterState.ATTACHED):
        why = f" ({view.router_reason})" if view.router_reason else ""
        return f"{name}'s router is {view.router_state.value}{why}: nothing loads or unloads until it runs"
    if action in _MODEL_ACTIONS:
        if not model_id:
            return f"no model is selected on {name}"
        if model is None:
            return f"{model_id} is no longer listed by {name}"
        if action == "load":
            return f"{model_id} is already {model.state.value}"
        if action == "unload":
            return f"{model_id} is not loaded ({model.state.value})"
    state = view.router_state.value
    if action == "reload":
        return f"{name}'s router is {state}: nothing to reload"
    if action == "start_router":
        return f"{name}'s router is already {state}"
    if action == "stop_router":
        return f"{name}'s router is {state}: nothing to stop"
    if action in _NOT_OURS:
        return f"this fleet does not reach {name}'s files"
    return f"{action} does not apply to {name} now"
