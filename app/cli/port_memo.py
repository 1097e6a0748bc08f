"""The port each managed router over ssh last had, kept here (0600) by `status` and `start`, so that the next
`status` opens its two channels to the router while it waits for the far side's first answer, not after it: at
300 ms a round trip less. A wrong guess (the router restarted on another port) costs two channels that are closed
unused."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile

MAX_ENTRIES = 64  # routers remembered at most (a config names a few)


def _path() -> str:
    xdg = os.environ.get("XDG_STATE_HOME") or ""
    state = xdg if xdg.startswith("/") else os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(state, "llamaherd", "router_ports.json")


def _read() -> dict[str, int]:
    try:
        with open(_path(), "rb") as f:
            data = json.loads(f.read(64 * 1024))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and type(v) is int and 0 < v < 65536}


def last_port(scope: str) -> int | None:
    return _read().get(scope)


def remember(ports: dict[str, int]) -> None:
    """Keep these routers' ports (a scope -> port); a memo that cannot be written is only a slower next status."""
    known = _read()
    if all(known.get(k) == v for k, v in ports.items()):
        return
    known.update(ports)
    kept = dict(list(known.items())[-MAX_ENTRIES:])
    path = _path()
    with contextlib.suppress(OSError):
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".router_ports.")
        try:
            with os.fdopen(fd, "w") as f:  # mkstemp makes it 0600
                json.dump(kept, f)
            os.replace(tmp, path)
        except OSError:
            os.unlink(tmp)
            raise
