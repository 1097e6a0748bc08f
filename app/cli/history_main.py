"""`llamaherd history` started without the rest of the command line's modules.

The full parser imports every command, and with them the ssh, HTTP, demo and fit modules: ~1 s of CPU on a slow
machine before a history query that itself takes tens of milliseconds. `history` needs none of them unless it
reads a managed router's log (then they are imported where used), so `python -m app` / `llamaherd` hands it
here when it is the command (see `is_history`). Same options, same exit codes as through app.cli.main.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence

from app.cli import history_cmds
from app.cli.commands import first_command
from app.cli.exits import exit_code
from app.config import config_named_by, load_config, resolve_config_path


def is_history(argv: Sequence[str]) -> bool:
    """The command given is `history` (-h/--help goes the long way)."""
    return first_command(argv) == "history"


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="llamaherd")
    parser.add_argument("--config", metavar="PATH")
    history_cmds.add_parsers(parser.add_subparsers(dest="command", metavar="COMMAND"))
    args = parser.parse_args(argv)

    def run() -> int:
        config = load_config(resolve_config_path(args.config), named_by=config_named_by(args.config))
        from app.cli.context import CliContext

        return int(asyncio.run(history_cmds.cmd_history(CliContext(config), args)))

    return exit_code(run)
