"""Which module defines each command, so a command's process imports that module alone.

The full parser imports every command's module, and with them the demo, the fit estimator and the UI: ~0.3 s of
CPU before a `status` over a slow link even starts connecting. The command word is found in argv the way
argparse would (the only global option is --config PATH), and only its module's parsers are built; anything
else (no command, -h, a typo) gets the full parser, so help and errors read the same as ever.
"""

from __future__ import annotations

from collections.abc import Sequence

COMMAND_MODULES = {
    "models": "router_cmds", "load": "router_cmds", "unload": "router_cmds", "events": "router_cmds",
    "status": "machine_cmds", "start": "machine_cmds", "stop": "machine_cmds", "logs": "machine_cmds",
    "preset": "preset_cmds", "key": "key_cmds", "dashboard": "dashboard_cmds", "demo": "dashboard_cmds",
    "fit": "fit_cmds", "config": "config_cmds", "history": "history_cmds", "top": "top_cmds",
    "serve": "serve_cmds",
    "ask": "ask_cmds", "probe": "ask_cmds",
    "search": "hub_cmds", "pull": "hub_cmds", "rm": "hub_cmds",
    "watch": "watch_cmds",
}  # fmt: skip
ALL_MODULES = tuple(dict.fromkeys(COMMAND_MODULES.values()))  # in the order `llamaherd -h` lists them


def first_command(argv: Sequence[str]) -> str | None:
    """The command word given, if any (what comes first after the global options)."""
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--config":
            i += 2
        elif a.startswith("--config="):
            i += 1
        else:
            return a
    return None
