"""Running a [[plugins]] command for the dashboard: what it acts on in its environment (never its argv); in the
background bounded by its timeout (output kept, its last bytes), or in the foreground with the terminal, which the
dashboard hands over first."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass

from app.config_plugins import PluginConfig
from app.services.core.waits import within
from app.services.hooks.runner import OUTPUT_BOUND


@dataclass(frozen=True)
class PluginRun:
    exit_code: int | None
    """None: it did not finish (timed out and killed) or could not start."""
    output: str
    error: str = ""


def plugin_env(machine: str, model: str | None, extra: Mapping[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra)
    env["LLAMAHERD_MACHINE"] = machine
    env["LLAMAHERD_MODEL"] = model or ""
    return env


async def run_background(plugin: PluginConfig, env: Mapping[str, str]) -> PluginRun:
    """Beside the dashboard: stdin closed, output bounded (its last bytes kept), its process group killed at its
    timeout."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *plugin.command,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env=dict(env),
            start_new_session=True,
        )
    except OSError as e:
        return PluginRun(None, "", f"cannot run {plugin.command[0]}: {e.strerror or e}")
    kept = bytearray()

    async def read() -> None:
        assert proc.stdout is not None
        while chunk := await proc.stdout.read(65536):
            kept.extend(chunk)
            del kept[:-OUTPUT_BOUND]

    try:
        await within(asyncio.gather(read(), proc.wait()), plugin.timeout)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 9)
        await proc.wait()
        return PluginRun(None, kept.decode(errors="replace"), f"timed out after {plugin.timeout:g} s")
    except asyncio.CancelledError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 9)
        raise
    return PluginRun(proc.returncode, kept.decode(errors="replace"))


def run_foreground(plugin: PluginConfig, env: Mapping[str, str]) -> PluginRun:
    """With the terminal (the caller has suspended the dashboard), until it ends."""
    try:
        done = subprocess.run(list(plugin.command), env=dict(env), check=False)
    except OSError as e:
        return PluginRun(None, "", f"cannot run {plugin.command[0]}: {e.strerror or e}")
    return PluginRun(done.returncode, "")
