"""`[[plugins]]` in config.toml, k9s-style: a key on the dashboard that runs the operator's command for the selected
model or machine (what it acts on in its environment, never its argv). Checked at load: a key a built-in binding of
the dashboard already has (after the config's [keymap]) is refused naming both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.config_hooks import LineOf, command_of, entry_where, parse_duration
from app.errors import ConfigError
from app.keymap_ids import DEFAULT_KEYS, bad_key, split_keys

PLUGIN_KEYS = ("key", "description", "scope", "command", "confirm", "background", "timeout")
SCOPES = ("model", "machine")


@dataclass(frozen=True)
class PluginConfig:
    key: str
    description: str
    command: tuple[str, ...]
    scope: str = "model"
    """"model": needs a model row (LLAMAHERD_MODEL set); "machine": the selected machine."""
    confirm: bool = False
    background: bool = True
    """True: run beside the dashboard, its outcome said in one line; False: the dashboard steps aside and the
    command gets the terminal until it ends."""
    timeout: float = 300.0
    """A background run that takes longer is killed (its process group)."""


def parse_plugins(raw: Any, path: Path, line_of: LineOf, keymap: Mapping[str, str]) -> tuple[PluginConfig, ...]:
    if not isinstance(raw, list):
        raise ConfigError(f"{path}: key 'plugins' must be an array of tables ([[plugins]])")
    taken = _dashboard_keys(keymap)
    out: list[PluginConfig] = []
    for i, p in enumerate(raw):
        plugin = _plugin(p, i, path, line_of)
        for key in split_keys(plugin.key):
            line = line_of("key", "plugins", i)
            where = f"{path}:{line}" if line else str(path)
            if key in taken:
                raise ConfigError(f"{where}: key 'key': {key!r} is already the dashboard's {taken[key]!r}")
            taken[key] = f"plugin {plugin.description!r}"
        out.append(plugin)
    return tuple(out)


def _dashboard_keys(keymap: Mapping[str, str]) -> dict[str, str]:
    return {k: bid for bid, keys in DEFAULT_KEYS["dashboard"].items() for k in split_keys(keymap.get(bid, keys))}


def _plugin(raw: Any, idx: int, path: Path, line_of: LineOf) -> PluginConfig:
    where = entry_where(raw, "plugins", idx, path, line_of, PLUGIN_KEYS)
    key = raw.get("key")
    why = bad_key(key) if isinstance(key, str) else "is missing"
    if why or not isinstance(key, str):
        raise ConfigError(f"{where('key')}: key 'key' in [[plugins]] #{idx + 1} {why}")
    description = raw.get("description", "")
    if not isinstance(description, str) or not description.strip() or "\n" in description:
        raise ConfigError(f"{where('description')}: key 'description' in [[plugins]] #{idx + 1} must be one line")
    command = command_of(raw, "plugins", idx, where)
    scope = raw.get("scope", "model")
    if scope not in SCOPES:
        raise ConfigError(f'{where("scope")}: key \'scope\' must be "model" or "machine", not {scope!r}')
    for flag in ("confirm", "background"):
        if flag in raw and not isinstance(raw[flag], bool):
            raise ConfigError(f"{where(flag)}: key {flag!r} must be true or false")
    timeout = parse_duration(raw.get("timeout", 300))
    if timeout is None or not 0 < timeout <= 86400:
        raise ConfigError(f"{where('timeout')}: key 'timeout' must be a duration above 0 and up to a day")
    return PluginConfig(
        key=key,
        description=description.strip(),
        command=command,
        scope=scope,
        confirm=raw.get("confirm", False),
        background=raw.get("background", True),
        timeout=timeout,
    )


def plugins_to_dict(plugins: tuple[PluginConfig, ...]) -> list[dict[str, Any]]:
    return [
        {"key": p.key, "description": p.description, "scope": p.scope, "command": list(p.command),
         "confirm": p.confirm, "background": p.background, **({"timeout": p.timeout} if p.timeout != 300.0 else {})}
        for p in plugins
    ]  # fmt: skip
