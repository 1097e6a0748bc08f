"""Running a [[plugins]] command for the dashboard: what it acts on in its environment (never its argv); in the
background bounded by its timeout (output kept, its last bytes), or in the foreground with the terminal, which the
dashboard hands over first."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping

from app.config_plugins import PluginConfig
from app.services.hooks.runner import CommandRun, run_bounded

PluginRun = CommandRun
"""How a plugin's run ended."""


def plugin_env(machine: str, model: str | None, extra: Mapping[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra)
    env["LLAMAHERD_MACHINE"] = machine
    env["LLAMAHERD_MODEL"] = model or ""
    return env


async def run_background(plugin: PluginConfig, env: Mapping[str, str]) -> PluginRun:
    """Beside the dashboard, bounded by its timeout (services/hooks/runner.py runs it as it runs a hook)."""
    return await run_bounded(plugin.command, env, plugin.timeout)


def run_foreground(plugin: PluginConfig, env: Mapping[str, str]) -> PluginRun:
    """With the terminal (the caller has suspended the dashboard), until it ends."""
    try:
        done = subprocess.run(list(plugin.command), env=dict(env), check=False)
    except OSError as e:
        return PluginRun(None, "", f"cannot run {plugin.command[0]}: {e.strerror or e}")
    return PluginRun(done.returncode, "")
