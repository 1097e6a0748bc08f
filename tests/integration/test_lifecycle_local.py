"""Router lifecycle on the local machine: start, adopt, stop, crash, bad starts, logs (router-lessons.md)."""

from __future__ import annotations

import asyncio
import os
import socket
import stat
import time
from pathlib import Path

import psutil
import pytest

from app.config import MachineConfig
from app.services.core.fleet_events import FleetEvent, MachineChanged
from app.services.core.router_types import RouterState
from app.services.machine.machine import Machine
from tests.helpers.herd import Herd, local_config
from tests.helpers.wait import wait_for


def test_start_detached_adopt_and_stop(herd: Herd) -> None:
    r = herd.run("start", "here")
    assert r.returncode == 0, r.stderr
    assert "router started" in r.stdout
    rec = herd.record()
    assert rec is not None and rec["state"] == "running"
    pid = int(rec["pid"])  # type: ignore[call-overload]
    # it outlived the command that started it, listens on loopback only, and logs to a 0600 file
    proc = psutil.Process(pid)
    assert proc.is_running()
    assert os.getsid(pid) == pid  # detached: a session of its own, so no hangup of ours reaches it
    listening = {c.laddr for c in proc.net_connections(kind="tcp") if c.status == psutil.CONN_LISTEN}
    assert listening and all(a.ip == "127.0.0.1" for a in listening)
    assert stat.S_IMODE(os.stat(str(rec["log"])).st_mode) == 0o600
    # a second llamaherd adopts it
    r2 = herd.run("start", "here")
    assert r2.returncode == 0 and "adopted" in r2.stdout and f"pid {pid}" in r2.stdout
    assert herd.router_pids() == [pid]
    r3 = herd.run("stop", "here")
    assert r3.returncode == 0 and r3.stdout.startswith(f"here: router stopped (pid {pid}): stopped on request")
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    # a second stop finds nothing to stop and says so, rather than "stopped" again
    r4 = herd.run("stop", "here")
    assert r4.returncode == 0 and r4.stdout.startswith("here: router already stopped (since "), r4.stdout
    assert f"ago): pid {pid}, stopped on request" in r4.stdout
    st = herd.run("status")
    assert "stopped" in st.stdout and "stopped on request" in st.stdout
    assert herd.record() is not None  # kept, so late watchers still read "stopped on request"


def test_two_concurrent_starts_give_one_router(herd: Herd) -> None:
    procs = [herd.popen("start", "here") for _ in range(2)]
    outs = [p.communicate(timeout=60) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert sorted("adopted" in o for o, _ in outs) == [False, True]
    assert len(herd.router_pids()) == 1


def test_stale_record_is_cleared_not_trusted(herd: Herd) -> None:
    assert herd.run("start", "here").returncode == 0
    rec = herd.record()
    assert rec is not None
    old = int(rec["pid"])  # type: ignore[call-overload]
    psutil.Process(old).kill()
    psutil.Process(old).wait(5)
    r = herd.run("start", "here")
    assert r.returncode == 0 and "router started" in r.stdout
    new = herd.record()
    assert new is not None and new["pid"] != old


@pytest.mark.timing
def test_kill_9_is_reported_within_2s_with_log_lines(herd: Herd, tmp_path: Path) -> None:
    assert herd.run("start", "here").returncode == 0
    rec = herd.record()
    assert rec is not None
    pid = int(rec["pid"])  # type: ignore[call-overload]

    async def watch() -> float:
        events: list[FleetEvent] = []
        os.environ["XDG_STATE_HOME"] = str(herd.state_home)
        m = Machine(MachineConfig(name="here", preset=str(tmp_path / "models.ini")), events.append)
        m.start()
        try:
            await wait_for(lambda: m.view.router_state is RouterState.RUNNING and m.view.stream == "sse", 10)
            t0 = time.monotonic()
            psutil.Process(pid).kill()
            await wait_for(lambda: m.view.router_state is RouterState.EXITED, 5, step=0.02)
            took = time.monotonic() - t0
            changed = [e for e in events if isinstance(e, MachineChanged)]
            assert changed[-1].view.router_state is RouterState.EXITED
            assert "exited without being asked" in changed[-1].view.router_reason
            assert any("listening on" in ln for ln in changed[-1].view.log_tail)
            return took
        finally:
            await m.close()

    old = os.environ.get("XDG_STATE_HOME")
    try:
        took = asyncio.run(watch())
    finally:
        if old is None:
            os.environ.pop("XDG_STATE_HOME", None)
        else:
            os.environ["XDG_STATE_HOME"] = old
    assert took < 2.0, took
    st = herd.run("status")
    assert "exited" in st.stdout and "listening on" in st.stdout


def bad_start(herd: Herd, tmp_path: Path, **extra: object) -> tuple[float, str]:
    """How long a failing `start` took beyond the command's own start-up, and what it said. The start-up (Python,
    imports, the config, a look at the machine) is timed with `status` on the same config just before: on a busy
    machine it alone took over 3 s, which is not the failing start's time."""
    herd.write_config(local_config("here", tmp_path / "models.ini", **extra))
    t0 = time.monotonic()
    herd.run("status", "here")
    startup = time.monotonic() - t0
    t0 = time.monotonic()
    r = herd.run("start", "here")
    took = time.monotonic() - t0
    assert r.returncode == 1, r.stdout
    return took - startup, r.stderr


@pytest.mark.timing
def test_taken_port_fails_within_3s_with_the_reason(herd: Herd, tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        took, msg = bad_start(herd, tmp_path, router_port=s.getsockname()[1])
    assert took < 3.0, took
    assert "exited during start-up" in msg and ("bind" in msg.lower() or "address" in msg.lower()), msg


def test_unknown_flag_fails_with_the_reason(herd: Herd, tmp_path: Path) -> None:
    took, msg = bad_start(herd, tmp_path, extra_args=["--no-such-flag"])
    assert took < 3.0 and "no-such-flag" in msg, (took, msg)


def test_missing_binary_fails(herd: Herd, tmp_path: Path) -> None:
    took, msg = bad_start(herd, tmp_path, program=str(tmp_path / "no-llama-server"))
    assert took < 3.0 and "no-llama-server" in msg, (took, msg)


def test_unreadable_preset_fails(herd: Herd, tmp_path: Path) -> None:
    # a missing one is made on the first start (test_new_preset_file.py); one that is there but cannot be read is not
    unreadable = tmp_path / "unreadable.ini"
    unreadable.mkdir()
    herd.write_config(local_config("here", unreadable))
    r = herd.run("start", "here")
    assert r.returncode == 1 and "failed to initialize router models" in r.stderr, r.stderr


def test_load_wait_failure_shows_the_models_log_lines(herd: Herd) -> None:
    assert herd.run("start", "here").returncode == 0
    r = herd.run("load", "here", "broken", "--wait")
    assert r.returncode == 1
    assert "broken failed to load (exit code 1)" in r.stderr
    assert "error loading model" in r.stderr  # the child's own line, from the log


def test_logs_model_filter(herd: Herd) -> None:
    assert herd.run("start", "here").returncode == 0
    assert herd.run("load", "here", "alpha", "--wait").returncode == 0
    assert herd.run("load", "here", "beta", "--wait").returncode == 0
    alpha = herd.run("logs", "here", "--model", "alpha", "-n", "500").stdout.splitlines()
    beta = herd.run("logs", "here", "--model", "beta", "-n", "500").stdout.splitlines()
    assert any("alpha.gguf" in ln for ln in alpha) and any("beta.gguf" in ln for ln in beta)
    assert not any("beta.gguf" in ln for ln in alpha) and not any("alpha.gguf" in ln for ln in beta)
    everything = herd.run("logs", "here", "-n", "5").stdout.splitlines()
    assert len(everything) == 5


def test_logs_to_a_file_are_written_whole_and_private(herd: Herd, tmp_path: Path) -> None:
    assert herd.run("start", "here").returncode == 0
    assert herd.run("load", "here", "alpha", "--wait").returncode == 0
    out = tmp_path / "saved" / "alpha.log"
    r = herd.run("logs", "here", "--model", "alpha", "-n", "500", "-o", str(out))
    assert r.returncode == 0 and r.stdout == "", r.stderr
    assert "lines written to" in r.stderr
    saved = out.read_text().splitlines()
    assert saved == herd.run("logs", "here", "--model", "alpha", "-n", "500").stdout.splitlines()
    assert any("alpha.gguf" in ln for ln in saved)
    assert out.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in out.parent.iterdir()] == ["alpha.log"]  # no temporary file left
    r = herd.run("logs", "here", "-f", "-o", str(out))
    assert r.returncode == 2 and "cannot follow" in r.stderr
