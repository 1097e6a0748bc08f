"""The hosts an operator's ~/.ssh/config names, offered when a machine is added from the dashboard.

Only the `Host` lines' plain names: a pattern (`*`, `?`, a `!` negation) names no one host. `Include`d files are not
followed: the offer is a convenience, and what the form accepts is any destination ssh itself would take. Bounded:
the first READ_BOUND bytes, HOSTS_BOUND names.
"""

from __future__ import annotations

import os
from pathlib import Path

READ_BOUND = 256 * 1024
HOSTS_BOUND = 200


def config_hosts(path: Path | None = None) -> list[str]:
    """The plain host names of `Host` lines (default: ~/.ssh/config), in file order, each once; [] when unreadable."""
    path = path or Path(os.path.expanduser("~/.ssh/config"))
    try:
        with path.open("rb") as f:
            text = f.read(READ_BOUND).decode("utf-8", "replace")
    except OSError:
        return []
    hosts: list[str] = []
    for line in text.splitlines():
        words = line.replace("=", " ", 1).split()
        if len(words) < 2 or words[0].lower() != "host":
            continue
        for name in words[1:]:
            if name.startswith("#"):
                break
            if not any(c in name for c in "*?!") and name.isprintable() and name not in hosts:
                hosts.append(name)
    return hosts[:HOSTS_BOUND]
