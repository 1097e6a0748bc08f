"""A machine added from the dashboard: its `[[machines]]` table appended to config.toml as text.

The file is never rewritten from what was parsed (that would lose its comments, its order and its blank lines): the
new table goes after what is there, and the whole new text is checked by the config loader, as a hand edit is, before
anything is written. What the form's fields mean is decided here (which key a target fills); whether a value is
usable is the loader's to say, so a port of 70000 is refused with the loader's own words.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import tomli_w

from app.config import MachineConfig, parse_config, write_atomically
from app.errors import ConfigError

TARGET_HELP = "local, user@host[:port] (ssh), or a router's URL to attach to (http://host:port)"
ADDED_NOTE = "# added from the llamaherd dashboard"
IMPLICIT_LOCAL_NOTE = "# the machine this config used while it named none (kept, now that it names one)"


def machine_table(name: str, target: str, key_env: str = "") -> dict[str, Any]:
    """The [[machines]] table a form's fields make: `target` is "local" (or empty), a router's URL, or an ssh
    destination `user@host[:port]` (`[v6]:port` for an IPv6 address)."""
    table: dict[str, Any] = {"name": name.strip()}
    target, key_env = target.strip(), key_env.strip()
    if target.startswith(("http://", "https://")):
        table["url"] = target
    elif target and target != "local":
        user, at, hostport = target.rpartition("@")
        host, port = hostport, ""
        if m := re.fullmatch(r"\[([^\]]*)\](?::(.*))?", hostport):
            host, port = m[1], m[2] or ""
        elif hostport.count(":") == 1:
            host, _, port = hostport.partition(":")
        table["host"] = host
        if at:
            table["user"] = user
        if port:
            # Not a number: left as text, for the loader to refuse as it refuses one in the file.
            table["port"] = int(port) if port.isdigit() else port
    if key_env:
        table["api_key_env"] = key_env
    return table


def append_machine(path: Path, table: dict[str, Any]) -> MachineConfig:
    """Append `table` to the config file at `path` (made, mode 0600, if missing; its mode kept otherwise) once the
    whole new file loads; the machine as the loader read it. ConfigError, with nothing written, when the file as it
    is does not load, or the new table does not."""
    real = Path(os.path.realpath(path))  # a config that is a link (dotfiles) stays one: its target is written
    try:
        old = real.read_text(encoding="utf-8")
        mode = real.stat().st_mode & 0o7777
    except FileNotFoundError:
        old, mode = "", 0o600
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: cannot read: {getattr(e, 'strerror', None) or e}") from None
    before = parse_config(old, path)  # a file that does not load now is the operator's to fix first
    tables = [table]
    if not before.machines and table.get("name") != "local":
        # The implicit "local" would be gone once the file names a machine: it is written out, as it was.
        tables.insert(0, {"name": "local"})
    # Every byte that was there stays; joined below with a blank line before each new table.
    parts = [old if old.endswith("\n") else old + "\n"] if old.strip() else []
    for t in tables:
        note = ADDED_NOTE if t is table else IMPLICIT_LOCAL_NOTE
        parts.append(f"{note}\n[[machines]]\n{tomli_w.dumps(t)}")  # the table's keys: plain values only
    text = "\n".join(parts)
    try:
        after = parse_config(text, path)
    except ConfigError as e:
        raise ConfigError(_without_place(str(e), path)) from None
    if len(after.machines) != len(before.machines) + len(tables):
        raise ConfigError(f"{path}: the new table was not read as a machine; nothing written")
    write_atomically(real, text.encode("utf-8"), mode)
    return after.machines[-1]


def _without_place(message: str, path: Path) -> str:
    """The loader's refusal without its file:line (the line is of the text not written)."""
    return re.sub(rf"^{re.escape(str(path))}(:\d+)?: ", "", message)
