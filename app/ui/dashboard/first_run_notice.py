"""The notice shown above the model table on the first run, when no config exists."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from app.ui.text.format import BUSY, DIM


def first_run_text(*, config_path: str, start_key: str, can_start: bool, missing_program: bool) -> Text:
    """The first run's notice (no machines configured): where the config goes, and what `s` does here."""
    t = Text.assemble(
        ("First run: ", "bold"),
        "no machines configured, so this is the machine llamaherd runs on.\n",
        ("Config file: ", DIM),
        (config_path, "bold"),
        ("  (", DIM),
        ("llamaherd config example", "bold"),
        (" prints one with every key)", DIM),
    )
    if missing_program:
        t.append("\nNo llama-server here yet: the machines pane says how to get one.", style=BUSY)
    elif can_start:
        t.append("\n")
        t.append(f" {start_key} ", style="bold reverse")
        t.append(" starts a router here with an empty preset.")
    return t


class FirstRunNotice(Static):
    """A few lines above the model table on the first run; hidden otherwise."""

    DEFAULT_CSS = """
    FirstRunNotice { height: auto; padding: 0 1; background: $boost; }
    """
