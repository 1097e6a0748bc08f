"""`[[hooks]]` in config.toml: the operator's commands run when the fleet changes (services/hooks/ runs them).

Checked at load like every other table: an unknown event, an empty command or a sustain that is not a duration is
refused naming the file, the line and the key.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.errors import ConfigError

HOOK_EVENTS = ("model_failed", "model_not_answering", "machine_unreachable", "machine_back", "router_exited")
"""What a hook may be `on` (services/hooks/triggers.py says when each happens)."""
HOOK_KEYS = ("on", "command", "sustain", "timeout")
MAX_TIMEOUT = 3600.0


@dataclass(frozen=True)
class HookConfig:
    on: tuple[str, ...]
    command: tuple[str, ...]
    """argv: run as it is, never through a shell (unless the operator writes `["sh", "-c", "..."]`)."""
    sustain: float = 0.0
    """Seconds the state must hold before the hook runs (a blip shorter than this runs nothing)."""
    timeout: float = 30.0
    """Seconds a run may take before it is killed (its process group)."""


LineOf = Callable[[str, str | None, int], int | None]


def parse_duration(value: object) -> float | None:
    """Seconds from 30, 2.5, "30s", "2m", "1h" (None: not a duration)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if value >= 0 else None
    if isinstance(value, str):
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*", value)
        if m:
            scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}[m.group(2) or "s"]
            return float(m.group(1)) * scale
    return None


def parse_hooks(raw: Any, path: Path, line_of: LineOf) -> tuple[HookConfig, ...]:
    if not isinstance(raw, list):
        raise ConfigError(f"{path}: key 'hooks' must be an array of tables ([[hooks]])")
    return tuple(_hook(h, i, path, line_of) for i, h in enumerate(raw))


def entry_where(
    raw: Any, table: str, idx: int, path: Path, line_of: LineOf, known: tuple[str, ...]
) -> Callable[[str], str]:
    """Check that one [[table]] entry is a table of known keys; give back where a key of it stands (file:line)."""

    def where(key: str) -> str:
        line = line_of(key, table, idx)
        return f"{path}:{line}" if line else str(path)

    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: each [[{table}]] entry must be a table")
    for key in raw:
        if key not in known:
            raise ConfigError(
                f"{where(key)}: unknown key {key!r} in [[{table}]] #{idx + 1} (known: {', '.join(known)})"
            )
    return where


def command_of(raw: dict[str, Any], table: str, idx: int, where: Callable[[str], str]) -> tuple[str, ...]:
    """An entry's `command`: argv, a non-empty list of non-empty strings."""
    command = raw.get("command")
    if not isinstance(command, list) or not command or not all(isinstance(c, str) and c for c in command):
        raise ConfigError(f"{where('command')}: key 'command' in [[{table}]] #{idx + 1} must be a non-empty list of "
                          'strings (argv, e.g. ["notify-send", "llamaherd"])')  # fmt: skip
    return tuple(command)


def _hook(raw: Any, idx: int, path: Path, line_of: LineOf) -> HookConfig:
    where = entry_where(raw, "hooks", idx, path, line_of, HOOK_KEYS)
    on = raw.get("on")
    if isinstance(on, str):
        on = [on]
    if not isinstance(on, list) or not on or not all(isinstance(e, str) for e in on):
        raise ConfigError(f"{where('on')}: key 'on' in [[hooks]] #{idx + 1} must list events: {', '.join(HOOK_EVENTS)}")
    unknown = [e for e in on if e not in HOOK_EVENTS]
    if unknown:
        raise ConfigError(f"{where('on')}: key 'on': no event {unknown[0]!r} (events: {', '.join(HOOK_EVENTS)})")
    command = command_of(raw, "hooks", idx, where)
    sustain = parse_duration(raw.get("sustain", 0))
    if sustain is None or sustain > 86400:
        raise ConfigError(f'{where("sustain")}: key \'sustain\' must be a duration up to a day (30, "30s", "2m")')
    timeout = parse_duration(raw.get("timeout", 30))
    if timeout is None or not 0 < timeout <= MAX_TIMEOUT:
        raise ConfigError(f"{where('timeout')}: key 'timeout' must be a duration above 0 and up to an hour")
    return HookConfig(on=tuple(dict.fromkeys(on)), command=command, sustain=sustain, timeout=timeout)


def hooks_to_dict(hooks: tuple[HookConfig, ...]) -> list[dict[str, Any]]:
    return [
        {"on": list(h.on), "command": list(h.command), **({"sustain": h.sustain} if h.sustain else {}),
         **({"timeout": h.timeout} if h.timeout != 30.0 else {})}
        for h in hooks
    ]  # fmt: skip
