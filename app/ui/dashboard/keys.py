"""The dashboard's keys: the bindings, the sentence each one has in help and the palette, and when each applies.

Binding ids are what an operator rebinds under [keymap] in config.toml, so they never change. ENABLED_WHEN is
the table behind the footer's dimmed keys: an action listed there applies only to a target it says yes to.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from textual.binding import Binding, BindingType

from app.services.ask.vision import is_projector
from app.services.core.fleet_events import MachineView
from app.services.core.host_types import Connection
from app.services.core.router_types import ModelInfo, ModelState, RouterState
from app.ui.screens.help import HelpRow

UP = (RouterState.RUNNING, RouterState.ATTACHED)
BUSY = (
    RouterState.RUNNING, RouterState.STARTING, RouterState.STOPPING, RouterState.ATTACHED, RouterState.NOT_ANSWERING,
)  # fmt: skip
STOPPABLE = (RouterState.RUNNING, RouterState.STARTING, RouterState.NOT_ANSWERING)

BINDINGS: list[BindingType] = [
    Binding("l", "load", "Load", id="load"),
    Binding("u", "unload", "Unload", id="unload"),
    Binding("r", "reload", "Reload", id="reload"),
    Binding("s", "start_router", "Start", id="start_router"),
    Binding("x", "stop_router", "Stop", id="stop_router"),
    Binding("e", "edit_preset", "Edit", id="edit_preset"),
    Binding("E", "edit_global_preset", "Edit [*]", show=False, id="edit_global_preset"),
    Binding("m", "model_files", "Files", show=False, id="model_files"),
    Binding("a", "ask", "Ask", show=False, id="ask"),
    Binding("d", "hub", "Hub", show=False, id="hub"),
    Binding("D", "remove_model", "Remove", show=False, id="remove_model"),
    Binding("g", "goto_log", "Log", id="goto_log"),
    Binding("f", "toggle_fleet", "Fleet", id="toggle_fleet"),
    Binding("h", "history", "History", show=False, id="history"),
    Binding("slash", "filter", "Filter", id="filter"),
    Binding("question_mark", "help", "Help", id="help"),
    Binding("q", "app.quit", "Quit", show=False, id="quit"),
    Binding("colon", "command", "Command", show=False, id="command"),
    Binding("R", "retry_machine", "Retry", show=False, id="retry_machine"),
    Binding("plus", "add_machine", "Add machine", show=False, id="add_machine"),
    Binding("c", "toggle_compact", "Compact", show=False, id="machines_compact"),
    Binding("exclamation_mark", "problems_first", "Problems first", show=False, id="machines_problems_first"),
    Binding("i", "model_detail", "Detail", show=False, id="model_detail"),
    *(Binding(str(n), f"pick_machine({n - 1})", f"Machine {n}", show=False, id=f"machine_{n}") for n in range(1, 10)),
]

# Sentences for the help screen and the palette; a binding's own description is a footer-sized word.
PALETTE: dict[str, str] = {
    "load": "Load the selected model",
    "unload": "Unload the selected model",
    "reload": "Reload presets of the selected machine",
    "start_router": "Start the router of the selected machine",
    "stop_router": "Stop the router of the selected machine (asks first)",
    "goto_log": "Show the selected model's log lines",
    "edit_preset": "Edit the selected model's preset section",
    "edit_global_preset": "Edit the selected machine's [*] section (every model)",
    "model_files": "Model files of the selected machine: add one to the preset",
    "ask": "Ask the selected model: a streamed answer, its first-token time and tokens/s",
    "hub": "Hub: search the selected machine's hub, see each file's fit, pull one (download)",
    "remove_model": "Remove the selected downloaded model from its machine: its cache files deleted (asks first)",
    "toggle_fleet": "Toggle the fleet view (every model on every machine)",
    "history": "History: every load, unload, eviction and crash, and why",
    "filter": "Filter the table by text",
    "help": "Show every key",
    "command": "Command: load MODEL on MACHINE..., unload, start, stop, retry, machine NAME, fleet, history, ask, pull",
    "retry_machine": "Retry the selected machine now, without waiting for its reconnect backoff",
    "add_machine": "Add a machine: local, ssh (user@host[:port]) or a router's URL, appended to config.toml",
    "machines_compact": "Machines as one line each (compact) or as cards",
    "machines_problems_first": "Machines with trouble first (unreachable, exited, failed models), or as configured",
    "model_detail": "Details of the selected model: memory, command line, preset, history, fit, its load's log",
}
BINDING_HELP: dict[str, str] = {
    **PALETTE,
    "quit": "Quit (routers keep running)",
    "sort": "Sort by the next column",
    "sort_reverse": "Reverse the sort",
    "mark": "Mark the row (and go down): l, u and x then act on every marked row, asked once",
    "log_follow": "Follow / pause the log",
    "log_level": "Levels shown: all, warnings+errors, errors",
    "log_wrap": "Wrap long log lines onto the rows below (the whole line readable), or cut them at the edge",
    "log_model": "Only the selected model's lines, or all",
    "log_search": "Find in the log: every line stays, the matches marked (n / N: next, previous, with a count)",
    "log_find_next": "Next match of the find (newer)",
    "log_find_prev": "Previous match of the find (older)",
    "log_filter": "Filter the log: only the lines holding the words",
    "log_copy": "Copy the log lines on screen (the find's match, when there is one) to the terminal's clipboard",
    "log_copy_all": "Copy every log line shown (after its filters) to the terminal's clipboard",
    "machine_prev": "Previous machine",
    "machine_next": "Next machine",
    "history_close": "Close the history",
    "history_filter": "Filter the history: machine=NAME model=NAME reason=WORDS, or any words",
    "history_refresh": "Read the history again",
}


@dataclass
class Target:
    """What a key would act on: a machine, the model on the row under the cursor (if any), and what is known of it."""

    view: MachineView
    model_id: str | None
    models: tuple[ModelInfo, ...]
    """The machine's models as it last listed them."""
    has_files: bool
    """Whether the fleet reaches this machine's preset and model files (FleetApi.has_files)."""

    @cached_property
    def model(self) -> ModelInfo | None:
        """The row's model as last listed; None when there is no row or the list no longer has it. Looked up once,
        and only by the actions that need it: the footer asks about every action on every paint."""
        return next((m for m in self.models if m.id == self.model_id), None)


def _manageable(v: MachineView) -> bool:
    """A router we may start or stop: ours (not attached to) and on a machine we can reach."""
    return v.managed and v.connection is not Connection.UNREACHABLE


def _files(t: Target) -> bool:
    """Files of a machine whose router we run: an attached router's preset file belongs to whoever runs it."""
    return t.has_files and t.view.managed


RETRYABLE = (RouterState.UNREACHABLE, RouterState.EXITED, RouterState.NOT_ANSWERING)

ENABLED_WHEN: dict[str, Callable[[Target], bool]] = {
    "retry_machine": lambda t: t.view.connection is Connection.UNREACHABLE or t.view.router_state in RETRYABLE,
    # Only through a router that runs: a stopped one's last list stays on screen, and `l` on it could only fail.
    "load": lambda t: (
        t.view.router_state in UP
        and t.model is not None
        and not t.model.state.running
        and t.model.state is not ModelState.DOWNLOADING  # its file is not there yet
    ),
    # on a downloading row, unload is the router's cancel of the download (reference §2.5)
    "unload": lambda t: (
        t.view.router_state in UP
        and t.model is not None
        and (t.model.state.running or t.model.state is ModelState.DOWNLOADING)
    ),
    "goto_log": lambda t: t.model is not None,
    "model_detail": lambda t: t.model is not None,
    "reload": lambda t: t.view.router_state in UP,
    "start_router": lambda t: _manageable(t.view) and t.view.router_state not in BUSY,
    # A router that is not answering can still be stopped: that is often why the operator is here.
    "stop_router": lambda t: _manageable(t.view) and t.view.router_state in STOPPABLE,
    "edit_preset": lambda t: _files(t) and bool(t.model_id),
    "edit_global_preset": _files,
    "model_files": _files,
    "ask": lambda t: t.model is not None and not is_projector(t.model.id) and t.view.router_state in UP,
    "hub": lambda t: t.view.router_state in UP,  # a pull is the router's work
    # Any listed row: one not from the cache is refused with the reason (a preset's file stays the operator's).
    "remove_model": lambda t: (
        t.view.router_state in UP and t.model is not None and t.model.state is not ModelState.DOWNLOADING
    ),
}
"""Actions that depend on the target; the footer dims their keys when this says no. Others always apply."""


def binding_rows(
    sources: Iterable[tuple[str, Sequence[BindingType]]], keymap: Mapping[str, str], shown: Callable[[str], str]
) -> list[HelpRow]:
    """Help rows for every binding with an id, on the keys it is on now; `shown` turns a key into its display."""
    rows: list[HelpRow] = []
    for where, bindings in sources:
        for b in bindings:
            if not isinstance(b, Binding) or not b.id:
                continue
            keys = keymap.get(b.id, b.key)
            display = ", ".join(shown(k.strip()) for k in keys.split(","))
            rows.append(HelpRow(where, display, b.id, BINDING_HELP.get(b.id, b.description)))
    rows.append(HelpRow("everywhere", "ctrl+p", "command_palette", "Command palette: every action, every model"))
    rows.append(HelpRow("everywhere", "tab", "focus_next", "Next pane"))
    return rows


def first_key(binding_id: str, keymap: Mapping[str, str], shown: Callable[[str], str]) -> str:
    """The first key a binding is on now (after [keymap]), as displayed."""
    b = next(b for b in own_bindings() if b.id == binding_id)
    return shown(keymap.get(b.id or "", b.key).split(",")[0].strip())


def own_bindings() -> Iterator[Binding]:
    return (b for b in BINDINGS if isinstance(b, Binding))


def palette_actions(keymap: Mapping[str, str], shown: Callable[[str], str]) -> list[tuple[str, str, str]]:
    """(sentence, action, "key K") for every binding the palette offers, in binding order."""
    return [
        (PALETTE[b.id], b.action, f"key {first_key(b.id, keymap, shown)}") for b in own_bindings() if b.id in PALETTE
    ]
