"""The real `python -m app` in a real tmux (as over ssh), against a real router: keys in, `capture-pane` out.

TERM=screen-256color as tmux gives it; a non-UTF-8 locale turns the whole screen ASCII.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.helpers.needs import require
from tests.helpers.router import RouterProc
from tests.helpers.wait import eventually, wait_for_sync

ROOT = Path(__file__).resolve().parents[2]


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
             f"cd {shlex.quote(str(ROOT))} && exec env {envs} {command}"],
            check=True, timeout=10, env={**os.environ, "LANG": "C.UTF-8"},
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

    def wait(self, cond: Callable[[str], bool], timeout: float = 20.0) -> str:
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


def dashboard(tmux: Tmux, router: RouterProc, tmp_path: Path, lang: str) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text(f'[[machines]]\nname = "box"\nurl = "{router.url}"\n')
    env = {"TERM": "screen-256color", "LANG": lang, "LC_ALL": "", "LC_CTYPE": "", "XDG_STATE_HOME": str(tmp_path)}
    tmux.start(f"{shlex.quote(sys.executable)} -m app --config {shlex.quote(str(cfg))}", env)


def row(screen: str, model: str) -> str:
    return next((ln for ln in screen.splitlines() if f" {model} " in ln and "│ model" not in ln), "")


def test_dashboard_in_tmux_loads_unloads_helps_and_quits(tmux: Tmux, router: RouterProc, tmp_path: Path) -> None:
    dashboard(tmux, router, tmp_path, "C.UTF-8")
    tmux.wait(lambda s: "unloaded" in row(s, "alpha") and "attached" in s)
    tmux.keys("l")
    tmux.wait(lambda s: "● loaded" in row(s, "alpha"))
    tmux.keys("u")
    tmux.wait(lambda s: "unloaded" in row(s, "alpha"))
    tmux.keys("?")
    help_screen = tmux.wait(lambda s: "start_router" in s)
    assert "stop_router" in help_screen and "toggle_fleet" in help_screen
    tmux.keys("Escape")
    tmux.wait(lambda s: "start_router" not in s)
    tmux.keys("f")
    tmux.wait(lambda s: "fleet: every model" in s)
    tmux.keys("q")
    tmux.wait_gone(10)
    assert not tmux.alive(), "q did not quit the dashboard"
    assert router.proc is not None and router.proc.poll() is None  # the router outlives the dashboard


def test_non_utf8_locale_draws_ascii_only(tmux: Tmux, router: RouterProc, tmp_path: Path) -> None:
    dashboard(tmux, router, tmp_path, "C")
    screen = tmux.wait(lambda s: "unloaded" in row(s.replace("|", "│"), "alpha") and "attached" in s)
    assert "+- machines" in screen
    assert not {c for c in screen if ord(c) > 127}, screen
