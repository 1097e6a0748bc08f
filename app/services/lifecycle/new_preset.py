"""The preset a router's first start makes when its file does not exist yet: the default one in the router's state
directory, or the file `preset =` names (a new operator names the file they mean to fill). llama-server refuses to
start without the file, and said so only in its log, after the dashboard had promised an empty preset."""

from __future__ import annotations

import getpass
import time


def new_preset_text(machine: str, router: str, now: float | None = None) -> str:
    """`version = 1` (skipped by the router, as its README's example starts) and who made the file, when and why."""
    try:
        who = getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container)
        who = "?"
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(now))
    return (
        "version = 1\n"
        f"; models.ini for llama-server router mode, made by llamaherd (run by {who}) on {when}, at the first\n"
        f"; start of router {router!r} on {machine}: the file did not exist. One [section] per model; [*]: all.\n"
        "[*]\n"
    )
