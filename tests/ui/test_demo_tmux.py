"""The newcomer's path, as the README tells it: `make demo` in a real tmux, three machines and their models on
screen, a model loading within 60 s, `q` leaves no demo process behind, `--keep` leaves the routers and the
next `llamaherd demo` adopts them."""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from scripts.demo_tour import play
from tests.helpers.tmux import Tmux
from tests.helpers.wait import wait_for_sync

MACHINES = ("workstation", "gpu-box-a", "gpu-box-b")


def demo_pids(state: Path) -> set[int]:
    """Every llama-server of this demo (routers and their model children), by pid."""
    out = set()
    for p in psutil.process_iter(["pid", "cmdline"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if "llama-server" in cmd and (str(state) in cmd or ("--alias" in cmd and _child_of(p.info["pid"], state))):
            out.add(p.info["pid"])
    return out


def _child_of(pid: int, state: Path) -> bool:
    try:
        parent = psutil.Process(pid).parent()
    except psutil.NoSuchProcess:
        return False
    return parent is not None and str(state) in " ".join(parent.cmdline())


@pytest.fixture
def state(tmp_path: Path, llama_server: str) -> Iterator[Path]:
    s = tmp_path / "state"
    yield s
    for pid in demo_pids(s):  # whatever a failed test left, stopped by pid
        with contextlib.suppress(psutil.NoSuchProcess):
            psutil.Process(pid).kill()


def env_for(state: Path) -> dict[str, str]:
    env = {"TERM": "screen-256color", "LANG": "C.UTF-8", "XDG_STATE_HOME": str(state)}
    if os.environ.get("LLAMA_SERVER"):
        env["LLAMA_SERVER"] = os.environ["LLAMA_SERVER"]
    return env


# `make demo` first runs pip (the install step) before the demo: on four workers that alone took most of 120 s.
@pytest.mark.timeout(400)
def test_readme_first_command_shows_a_live_fleet_and_q_cleans_up(tmux: Tmux, state: Path) -> None:
    # The README's first command, exactly; PYTHON pins the interpreter this suite runs under.
    tmux.start(f"make demo PYTHON={shlex.quote(sys.executable)}", env_for(state))
    screen = tmux.wait(lambda s: all(m in s for m in MACHINES) and "chat-small" in s, timeout=300)
    assert "running" in screen
    # a load is a fraction of a second with tiny models: the badge, or the child's own "loading model" line
    wait_for_sync(lambda: "loading" in tmux.screen(), 60, step=0.05, what="a load on screen", explain=tmux.screen)
    running = demo_pids(state)
    assert len([p for p in running if "--models-preset" in " ".join(psutil.Process(p).cmdline())]) == 3
    tmux.keys("q")
    tmux.wait_gone(20)
    assert not tmux.alive()
    wait_for_sync(lambda: not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
                                  for p in running), 10, what="demo processes gone", step=0.1,
                  explain=lambda: str([p for p in running if psutil.pid_exists(p)]))  # fmt: skip


def test_keep_then_a_second_demo_adopts(tmux: Tmux, state: Path) -> None:
    py = shlex.quote(sys.executable)
    tmux.start(f"{py} -m app demo --keep --no-traffic", env_for(state))
    tmux.wait(lambda s: all(m in s for m in MACHINES) and s.count("running") >= 3, timeout=90)
    tmux.keys("q")
    tmux.wait_gone(20)
    routers = {p for p in demo_pids(state) if "--models-preset" in " ".join(psutil.Process(p).cmdline())}
    assert len(routers) == 3  # --keep left them
    tmux.start(f"{py} -m app demo --no-traffic", env_for(state))
    tmux.wait(lambda s: all(m in s for m in MACHINES) and s.count("running") >= 3, timeout=90)
    again = {p for p in demo_pids(state) if "--models-preset" in " ".join(psutil.Process(p).cmdline())}
    assert again == routers  # adopted, not started anew
    tmux.keys("q")
    tmux.wait_gone(20)
    # this run started none of them, so it stops none of them: the routers are left as the first run left them
    assert all(psutil.pid_exists(p) for p in routers)


@pytest.mark.timing  # the tour holds each step and reads toasts, which go after a few seconds
def test_the_recorded_tour_plays_end_to_end(tmux: Tmux, state: Path) -> None:
    """The tour `make recording` records (scripts/demo_tour.py), on the demo with its scenario running: each key
    brings what the tour says it does (a load said done, a failure in one line, its log, help, an unload)."""
    tmux.start(f"{shlex.quote(sys.executable)} -m app demo", env_for(state))
    play(tmux.keys, tmux.screen)
    running = demo_pids(state)
    tmux.keys("q")
    tmux.wait_gone(20)
    wait_for_sync(lambda: not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
                                  for p in running), 10, what="demo processes gone", step=0.1)  # fmt: skip
