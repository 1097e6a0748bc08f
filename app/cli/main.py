"""argparse for `llamaherd`: the dashboard by default, and headless commands for scripts."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import platform
import sys
from collections.abc import Sequence

from app.cli.commands import ALL_MODULES, COMMAND_MODULES, first_command
from app.cli.context import CliContext
from app.cli.exits import exit_code
from app.cli.output import err
from app.config import Config, config_named_by, load_config, resolve_config_path
from app.errors import ConfigError


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; given a known command word, with that command's module's parsers only (commands.py)."""
    parser = argparse.ArgumentParser(
        prog="llamaherd",
        description="A terminal dashboard for llama-server routers on several machines. "
        "Without a command it opens the dashboard.",
    )
    parser.add_argument(
        "--config",
        metavar="PATH",
        help="config file (default: $LLAMAHERD_CONFIG, then $XDG_CONFIG_HOME/llamaherd/config.toml)",
    )
    parser.add_argument("--version", action=VersionAction, help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    only = COMMAND_MODULES.get(command or "")
    # `--version` needs no command's parser: it answers before any module is imported.
    for name in (only,) if only else () if command == "--version" else ALL_MODULES:
        importlib.import_module(f"app.cli.{name}").add_parsers(sub)
    return parser


class VersionAction(argparse.Action):
    """argparse's "version" action, with the version read only when it is asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        print(version_line())
        parser.exit()


def version_line() -> str:
    # Imported here: importlib.metadata is ~15 ms of every command's start-up, and only --version reads it.
    from importlib.metadata import PackageNotFoundError, version

    try:
        mine = version("llamaherd")
    except PackageNotFoundError:  # run from a source tree that was never installed
        mine = "unknown (not installed)"
    return f"llamaherd {mine} (Python {platform.python_version()})"


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(first_command(argv))
    args = parser.parse_args(argv)
    try:
        if getattr(args, "needs_config", True):
            config = load_config(resolve_config_path(args.config), named_by=config_named_by(args.config))
        else:  # the demo writes its own; `config example` prints one
            config = Config()
    except ConfigError as e:
        err(str(e))
        return 2
    if args.command is None:
        from app.cli import dashboard_cmds

        args.func, args.sync = dashboard_cmds.cmd_dashboard, True
    ctx = CliContext(config)
    if getattr(args, "sync", False):
        return exit_code(lambda: int(args.func(config, args)))
    return exit_code(lambda: int(asyncio.run(args.func(ctx, args))))


if __name__ == "__main__":
    sys.exit(main())
