"""[[plugins]] on the dashboard (k9s-style): which plugin a key runs, and how its outcome reads: one line (a toast)
and its output in the log panel. Running it is the service layer's (services/hooks/plugin_run.py)."""

from __future__ import annotations

from app.config_plugins import PluginConfig
from app.keymap_ids import split_keys
from app.services.core.log_lines import LogLine
from app.services.core.textsafe import visible
from app.services.hooks.plugin_run import PluginRun

OUTPUT_LINES = 50
"""Lines of a background plugin's output put in the log panel (its last ones)."""


def outcome_line(plugin: PluginConfig, run: PluginRun) -> str:
    """What ran, how it ended, its last words."""
    how = f"exit {run.exit_code}" if run.exit_code is not None else run.error
    last = next((ln for ln in reversed(run.output.splitlines()) if ln.strip()), "")
    return visible(f"{plugin.description}: {how}" + (f": {last[:200]}" if last else ""))


def output_lines(run: PluginRun) -> list[LogLine]:
    return [LogLine(raw=f"[plugin] {ln}", text=f"[plugin] {ln}") for ln in run.output.splitlines()[-OUTPUT_LINES:]]


def key_of(event_key: str, plugins: tuple[PluginConfig, ...]) -> int | None:
    """The plugin a pressed key runs (its index), if any."""
    for i, p in enumerate(plugins):
        if event_key in split_keys(p.key):
            return i
    return None
