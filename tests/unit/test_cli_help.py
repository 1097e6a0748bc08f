"""`llamaherd --help` and every sub-command's --help describe every option."""

from __future__ import annotations

import argparse
import subprocess
import sys

from app.cli.main import build_parser


def subparsers(
    p: argparse.ArgumentParser, prefix: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    out = [(prefix, p)]
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out += subparsers(sub, (*prefix, name))
    return out


def test_every_option_of_every_command_has_help() -> None:
    parsers = subparsers(build_parser())
    names = {" ".join(path) for path, _ in parsers}
    for expected in ("models", "load", "unload", "events", "status", "start", "stop", "logs", "preset set",
                     "preset show", "preset add", "preset remove", "preset unset", "demo", "dashboard"):  # fmt: skip
        assert expected in names
    for path, p in parsers:
        assert p.description or not path, f"{path} has no description"
        for action in p._actions:
            if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
                continue
            assert action.help and len(action.help) > 8, f"llamaherd {' '.join(path)}: {action.dest} has no help"


def test_help_runs_for_every_command() -> None:
    for path, _ in subparsers(build_parser()):
        r = subprocess.run([sys.executable, "-m", "app", *path, "--help"], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0 and "usage: llamaherd" in r.stdout, (path, r.stderr)
