"""A tmux server of the test's own for driving the real `python -m app` as a terminal user would: keys in,
`capture-pane` out. The `tmux` fixture is enabled for the whole suite by `pytest_plugins` in tests/conftest.py, and
a test that takes it carries the `tmux` marker.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from tests.helpers.needs import require
from tests.helpers.wait import eventually, wait_for_sync

ROOT = Path(__file__).resolve().parents[2]


def without_size(env: Mapping[str, str]) -> dict[str, str]:
    """pytest-xdist's workers run with COLUMNS=80 and LINES=24 in their environment; passed on, they make the app
    draw 80x24 inside a 120x40 pane (Textual, like shutil.get_terminal_size, believes them first)."""
    return {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")}


class Tmux:
    """One tmux server of the test's own (its own socket), stopped by the test, by pid."""

    def __init__(self, socket: str) -> None:
        self.socket = socket
        self.pids: list[int] = []

    def cmd(self, *args: str) -> str:
        r = subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=10)
        return r.stdout

    def start(self, command: str, env: dict[str, str]) -> None:
        envs = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", "new-session", "-d", "-x", "120", "-y", "40", "-s", "t",
             f"cd {shlex.quote(str(ROOT))} && exec env -u COLUMNS -u LINES {envs} {command}"],
            check=True, timeout=10, env={**without_size(os.environ), "LANG": "C.UTF-8"},
        )  # fmt: skip
        for fmt in ("#{pid}", "#{pane_pid}"):
            out = self.cmd("display-message", "-p", "-t", "t", fmt).strip()
            if out.isdigit():
                self.pids.append(int(out))

    def screen(self) -> str:
        return self.cmd("capture-pane", "-p", "-t", "t")

    def keys(self, *keys: str) -> None:
        self.cmd("send-keys", "-t", "t", *keys)

    def alive(self) -> bool:
        r = subprocess.run(["tmux", "-L", self.socket, "has-session", "-t", "t"], capture_output=True, timeout=10)
        return r.returncode == 0

    def wait(self, cond: Callable[[str], bool], timeout: float = 40.0) -> str:
        text = [""]

        def shown() -> bool:
            text[0] = self.screen()
            return cond(text[0])

        wait_for_sync(shown, timeout, what="on screen", step=0.1, explain=lambda: text[0])
        return text[0]

    def wait_gone(self, timeout: float) -> None:
        eventually(lambda: not self.alive(), timeout, step=0.1)

    def stop(self) -> None:
        self.cmd("kill-server")
        for pid in reversed(self.pids):  # the app, then the server, if either outlived kill-server
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    require(shutil.which("tmux"), "tmux is not installed")
    t = Tmux(f"llamaherd-test-{os.getpid()}-{tmp_path.name}")
    try:
        yield t
    finally:
        t.stop()
