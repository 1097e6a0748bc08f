"""`llamaherd --help` and every sub-command's --help describe every option."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from app.cli.commands import COMMAND_MODULES, first_command
from app.cli.main import build_parser, main


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


def test_help_runs_for_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    # Each command's --help through main(), as `llamaherd` calls it (its parser built for that command word alone)...
    for path, _ in subparsers(build_parser()):
        with pytest.raises(SystemExit) as done:
            main([*path, "--help"])
        out = capsys.readouterr().out
        assert done.value.code == 0 and "usage: llamaherd" in out, path
    # ...and a few as a new process, the way a shell runs it (`history` takes a path of its own: history_main.py).
    for path in ((), ("history",), ("preset", "set"), ("status",)):
        r = subprocess.run([sys.executable, "-m", "app", *path, "--help"], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0 and "usage: llamaherd" in r.stdout, (path, r.stderr)


def test_every_command_is_routed_to_the_module_that_defines_it() -> None:
    full = {name for path, _ in subparsers(build_parser()) if len(path) == 1 for name in path}
    assert set(COMMAND_MODULES) == full
    for command in COMMAND_MODULES:
        own = {path[0] for path, _ in subparsers(build_parser(command)) if len(path) == 1}
        assert command in own, command


def test_a_headless_command_imports_its_own_module_only() -> None:
    # `status`, `start`, `stop` and `preset set` over a slow link: the demo, the fit estimator and the UI are not
    # imported before connecting (~0.3 s of CPU on this machine).
    probe = (
        "import sys; from app.cli.main import build_parser; build_parser(sys.argv[1]); "
        "print(sorted(m for m in ('app.demo', 'app.cli.fit_cmds', 'app.cli.dashboard_cmds', 'textual') "
        "if m in sys.modules))"
    )
    for command in ("status", "start", "stop", "preset"):
        r = subprocess.run([sys.executable, "-c", probe, command], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and r.stdout.strip() == "[]", (command, r.stdout, r.stderr)
    r = subprocess.run([sys.executable, "-c", probe, "-h"], capture_output=True, text=True, timeout=60)
    assert "app.demo" in r.stdout  # the full parser, for help and errors


def test_the_command_word_comes_after_the_global_option() -> None:
    assert first_command(["--config", "c.toml", "status", "--json"]) == "status"
    assert first_command(["--config=c.toml", "preset", "set"]) == "preset"
    assert first_command(["--config", "c.toml"]) is None
    assert first_command(["-h"]) == "-h"
