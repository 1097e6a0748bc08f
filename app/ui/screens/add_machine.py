"""Add a machine: a small form (name, where it is, the API key's variable) whose table is appended to config.toml.

The loader judges the table as it judges a hand edit (config_add_machine.py); its refusal is said under the form,
which stays open with what was typed. The file is read and written in a thread: the UI never waits on a disk.
Dismissed with the machine as the loader read it, or None when cancelled.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.suggester import Suggester
from textual.widgets import Button, Input, Label, Static

from app.config import MachineConfig
from app.config_add_machine import TARGET_HELP, append_machine, machine_table
from app.errors import ConfigError
from app.services.ssh.config_hosts import config_hosts
from app.ui.text.format import BAD, DIM
from app.ui.text.plain_text import plain

FIELDS = ("name", "target", "key_env")
HOSTS_SAID = 8  # hosts of ~/.ssh/config named under the field; all of them complete


class HostSuggester(Suggester):
    """Completes the host of `[user@]host` from ~/.ssh/config's names (filled once they are read)."""

    def __init__(self) -> None:
        super().__init__(use_cache=False, case_sensitive=False)
        self.hosts: list[str] = []

    async def get_suggestion(self, value: str) -> str | None:
        user, at, typed = value.rpartition("@")
        if not typed:
            return None
        host = next((h for h in self.hosts if h.lower().startswith(typed.lower()) and h != typed), None)
        return None if host is None else f"{user}{at}{host}"


class AddMachineScreen(ModalScreen[MachineConfig | None]):
    DEFAULT_CSS = """
    AddMachineScreen { align: center middle; }
    #add-machine-box {
        width: 76; max-width: 100%; height: auto; max-height: 100%;
        border: round $accent; background: $surface; padding: 0 1;
    }
    #add-machine-box Label { margin-top: 1; }
    #add-machine-box Input { width: 1fr; }
    #add-machine-said { height: auto; margin-top: 1; }
    #add-machine-hosts { height: auto; }
    #add-machine-buttons { height: auto; align-horizontal: right; margin-top: 1; }
    #add-machine-buttons Button { margin-left: 1; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "add", "Add", id="add_machine_save"),
        Binding("escape", "cancel", "Cancel", id="add_machine_cancel"),
    ]

    def __init__(self, config_path: Path) -> None:
        super().__init__()
        self.config_path = config_path
        self.busy = False
        self.hosts = HostSuggester()

    def compose(self) -> ComposeResult:
        with Vertical(id="add-machine-box"):
            yield Label("Name (shown in the dashboard, used on the command line)")
            yield Input(placeholder="gpu-box", id="name")
            yield Label(f"Where: {TARGET_HELP}")
            yield Input(placeholder="local", id="target", suggester=self.hosts)
            yield Static("", id="add-machine-hosts")
            yield Label("API key: the name of an environment variable holding it (optional)")
            yield Input(placeholder="GPU_BOX_KEY", id="key_env")
            yield Static(plain(f"Appended to {self.config_path} as a [[machines]] table."), id="add-machine-said")
            with Horizontal(id="add-machine-buttons"):
                yield Button("Add (ctrl+s)", id="add", variant="primary")
                yield Button("Cancel (esc)", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#add-machine-box").border_title = "add a machine"
        self.query_one("#name", Input).focus()
        self.run_worker(self._read_hosts(), group="add-machine-hosts")

    async def _read_hosts(self) -> None:
        self.hosts.hosts = hosts = await asyncio.to_thread(config_hosts)
        if hosts:
            more = f" and {len(hosts) - HOSTS_SAID} more" if len(hosts) > HOSTS_SAID else ""
            said = f"hosts in ~/.ssh/config (→ to complete): {', '.join(hosts[:HOSTS_SAID])}{more}"
            self.query_one("#add-machine-hosts", Static).update(plain(said, DIM))

    def field(self, name: str) -> str:
        return self.query_one(f"#{name}", Input).value

    def say(self, text: str, style: str = "") -> None:
        self.query_one("#add-machine-said", Static).update(plain(text, style, multiline=True))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter goes to the next field; on the last one, it adds."""
        i = FIELDS.index(str(event.input.id))
        if i + 1 < len(FIELDS):
            self.query_one(f"#{FIELDS[i + 1]}", Input).focus()
        else:
            self.action_add()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "add":
            self.action_add()
        else:
            self.action_cancel()

    def action_cancel(self) -> None:
        self.dismiss(None)

    def action_add(self) -> None:
        if not self.busy:
            self.busy = True
            self.run_worker(self._add(), exclusive=True, group="add-machine")

    async def _add(self) -> None:
        table = machine_table(self.field("name"), self.field("target"), self.field("key_env"))
        try:
            added = await asyncio.to_thread(append_machine, self.config_path, table)
        except (ConfigError, OSError) as e:
            self.busy = False
            self.say(f"Not added: {e}", BAD)  # the form stays, with what was typed
            return
        self.dismiss(added)
