"""`[aliases]` in config.toml: a word that stands for a whole `:` command, as k9s's aliases do (`gb = "machine
gpu-box-b"`, `coders = "load qwen2.5-coder-14b on gpu-box-a gpu-box-b"`). Typed as `:gb`, or with more words after
it (`:q8 on laptop` when `q8 = "load qwen3-8b-q8"`), which follow the alias's own.

Checked at load like every other table, naming the file, the line and the key: an alias is one word that is not a
verb (a verb keeps its meaning), and its command begins with a verb (or a verb's unique beginning); an alias never
names another alias, so nothing expands twice.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from app.command_verbs import VERBS, verbs_begun_by
from app.errors import ConfigError

ALIAS_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,31}")
MAX_ALIAS_COMMAND = 512
MAX_ALIASES = 256


def parse_aliases(raw: Any, where_of: Callable[[str | None], str]) -> dict[str, str]:
    """Alias -> the command it stands for. `where_of(key)` says where a key of [aliases] stands (file:line); None
    for the table itself."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{where_of(None)}: key 'aliases' must be a table of words, e.g. gb = \"machine gpu-b\"")
    if len(raw) > MAX_ALIASES:
        raise ConfigError(f"{where_of(None)}: [aliases] holds {len(raw)} aliases; at most {MAX_ALIASES}")
    out: dict[str, str] = {}
    lowered: dict[str, str] = {}  # aliases are typed in either case: name.lower() -> name
    for name, command in raw.items():
        where = where_of(name)
        if not ALIAS_NAME.fullmatch(name):
            raise ConfigError(
                f"{where}: key {name!r} in [aliases] must be one word of letters, digits, '-', '_' or '.' "
                "(at most 32, beginning with a letter or digit)"
            )
        if name.lower() in VERBS:
            raise ConfigError(f"{where}: key {name!r} in [aliases] is the command {name.lower()!r} itself")
        if not isinstance(command, str) or not command.strip():
            raise ConfigError(f'{where}: key {name!r} in [aliases] must be a command, e.g. "machine gpu-b"')
        if len(command) > MAX_ALIAS_COMMAND:
            raise ConfigError(f"{where}: key {name!r} in [aliases] is longer than {MAX_ALIAS_COMMAND} characters")
        if not command.isprintable():  # as every other string of the config
            raise ConfigError(f"{where}: key {name!r} in [aliases] holds a control character (a newline or a tab?)")
        first = command.split()[0]
        found = verbs_begun_by(first)
        if len(found) != 1:
            why = f"could be {', '.join(found)}" if found else f"is no command (commands: {', '.join(VERBS)})"
            raise ConfigError(f"{where}: key {name!r} in [aliases] begins with {first!r}, which {why}")
        if name.lower() in lowered:
            raise ConfigError(
                f"{where}: key {name!r} in [aliases] differs from {lowered[name.lower()]!r} only in case "
                "(aliases are typed in either case)"
            )
        lowered[name.lower()] = name
        out[name] = " ".join(command.split())
    return out
