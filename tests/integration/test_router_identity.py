"""A router is known by what a wall-clock step leaves alone (app/services/hosts/process_start.py), locally and over
ssh, with a real llama-server and the real test sshd (the far side is this machine).

The clock of this shared machine is never stepped here: a record whose epoch start is 30 s off is what a step of
30 s between the start and the stop looks like (btime moves with the wall clock; the boot id and the start since
boot do not). Every process a test starts it ends by pid.
"""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path

import psutil
import pytest

from app.config import MachineConfig
from app.services.core.router_types import RouterState
from app.services.hosts.local import LocalTransport
from app.services.hosts.process_start import ProcStart
from app.services.hosts.transport import Transport
from app.services.lifecycle.manager import RouterManager, RouterRecord
from app.services.machine.machine import Machine
from app.services.ssh.remote_trace import TRACE_ENV
from tests.helpers.processes import pending_signals, stop
from tests.helpers.router import preset_text
from tests.helpers.sshd import SshServer, ssh_transport
from tests.helpers.wait import wait_for
from tests.integration.test_lifecycle_ssh import ssh_machine

STEP = 30.0  # seconds: a wall-clock step between the start and the stop


def argv_requests(trace: Path) -> int:
    """How many times the far side was asked for a command line (remote_trace.py's record of every request)."""
    return trace.read_text().count("process command line") if trace.exists() else 0


def gone(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return True


async def wait_gone(pid: int) -> None:
    await wait_for(lambda: gone(pid), 20, what=f"pid {pid} gone")


@pytest.fixture(params=["local", pytest.param("ssh", marks=pytest.mark.ssh)])
async def side(
    request: pytest.FixtureRequest, tmp_path: Path, tiny_models: dict[str, Path], llama_server: str,
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[tuple[MachineConfig, Transport]]:  # fmt: skip
    """A managed router's machine and a transport to it: this machine, or the test sshd's "remote"."""
    (tmp_path / "remote models.ini").write_text(preset_text(dict(tiny_models)))
    if request.param == "local":
        monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
        cfg = MachineConfig(name="box", router=f"id-{tmp_path.name}", program=llama_server,
                            preset=str(tmp_path / "remote models.ini"))  # fmt: skip
        t: Transport = LocalTransport()
    else:
        server: SshServer = request.getfixturevalue("sshd")
        cfg = ssh_machine(server, "box", tmp_path, llama_server)
        t = ssh_transport(server)
    try:
        yield cfg, t
    finally:
        await t.close()


@pytest.fixture
def started() -> Iterator[list[int]]:
    """Pids of the routers a test started: each is ended by pid afterwards, whatever the test did."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        stop(pid)


@pytest.fixture
def sleeper() -> Iterator[psutil.Process]:
    p = subprocess.Popen(["sleep", "120"])
    yield psutil.Process(p.pid)
    stop(p.pid)
    p.wait()


async def test_a_clock_step_does_not_hide_the_router_from_stop(
    side: tuple[MachineConfig, Transport], started: list[int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg, t = side
    m = RouterManager(cfg, t)
    rec, new = await m.start()
    started.append(rec.pid)
    assert new and rec.boot_id and rec.since_boot is not None, rec
    stepped = replace(rec, start_time=rec.start_time + STEP)
    await m.write_record(stepped)
    assert await m.look() == (stepped, True)
    trace = tmp_path / "remote.trace"
    monkeypatch.setenv(TRACE_ENV, str(trace))
    st = await m.stop()
    assert st.state is RouterState.STOPPED and not st.already, st
    await wait_gone(rec.pid)
    assert argv_requests(trace) == 0  # known by its start: no request more than a stop always sent


async def test_an_old_record_after_a_clock_step_is_known_by_its_command_line(
    side: tuple[MachineConfig, Transport], started: list[int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record an older llamaherd wrote has only the epoch start: the command line (its random port, its preset)
    still says it is the router, and stop stops it rather than saying "already stopped"."""
    cfg, t = side
    m = RouterManager(cfg, t)
    rec, _ = await m.start()
    started.append(rec.pid)
    old = replace(rec, start_time=rec.start_time + STEP, boot_id="", since_boot=None)
    await m.write_record(old)
    assert await m.look() == (old, False)  # the epoch rule alone is fooled by the step
    trace = tmp_path / "remote.trace"
    monkeypatch.setenv(TRACE_ENV, str(trace))
    st = await m.stop()
    assert st.state is RouterState.STOPPED and not st.already, st
    await wait_gone(rec.pid)
    assert argv_requests(trace) == (0 if t.is_local else 1)  # the one request this case costs over ssh
    after = await m.read_record()
    # the record says stopping, with the start as the live process had it (not the stepped one)
    assert after is not None and after.state is RouterState.STOPPING and after.since_boot == rec.since_boot


async def test_an_old_record_after_a_clock_step_is_adopted_not_started_again(
    side: tuple[MachineConfig, Transport], started: list[int]
) -> None:
    cfg, t = side
    rec, _ = await RouterManager(cfg, t).start()
    started.append(rec.pid)
    m = RouterManager(cfg, t)
    await m.write_record(replace(rec, start_time=rec.start_time + STEP, boot_id="", since_boot=None))
    again, new = await m.start()
    if again.pid != rec.pid:
        started.append(again.pid)  # a second router (the bug): ended too
    assert not new and again.pid == rec.pid, again
    # the record was written again with the live start: later looks know it without its command line
    healed = await m.read_record()
    assert healed is not None and (healed.boot_id, healed.since_boot) == (rec.boot_id, rec.since_boot)
    assert await m.look() == (healed, True)
    assert not (await m.stop()).already
    await wait_gone(rec.pid)


async def test_a_stale_record_naming_another_process_is_not_signalled(
    side: tuple[MachineConfig, Transport], sleeper: psutil.Process, llama_server: str
) -> None:
    cfg, t = side
    m = RouterManager(cfg, t)
    live = await t.process_start(sleeper.pid)
    assert live is not None and live.boot_relative
    argv = (llama_server, "--host", "127.0.0.1", "--port", "23456", "--metrics")  # a router's, not sleep's
    base = RouterRecord(pid=sleeper.pid, start_time=live.epoch, port=23456, program=llama_server, preset="p",
                        log="l", argv=argv, requires_key=True)  # fmt: skip
    stale = [
        # this boot, another start since boot: a reused pid (even with the epoch start matching)
        base.with_start(ProcStart(live.epoch, live.boot_id, (live.since_boot or 0) - 7.5)),
        # another boot, the same start since boot: a pid from before a reboot
        base.with_start(ProcStart(live.epoch, "00000000-0000-4000-8000-000000000000", live.since_boot)),
        # an older llamaherd's record, epoch start off by more than the tolerance
        base.with_start(ProcStart(live.epoch - 100)),
    ]
    for rec in stale:
        await m.write_record(rec)
        assert await m.look() == (rec, False)
        st = await m.stop()
        assert st.already and st.state is RouterState.EXITED, st
        assert sleeper.status() != psutil.STATUS_ZOMBIE and not pending_signals(sleeper.pid)
    # and the same process is still recognised (the check is not one that says "no" to everything)
    same = base.with_start(live)
    await m.write_record(same)
    assert await m.look() == (same, True)
    await m.clear_record()


async def test_restarts_while_another_llamaherd_follows_leave_no_router_behind(
    side: tuple[MachineConfig, Transport], started: list[int]
) -> None:
    """As bench/cycle.py does (a fresh manager per stop and per start) while a dashboard's Machine follows, each
    stop coming after a clock step: after every restart the old router is gone."""
    cfg, t = side
    follower = Machine(cfg, emit=lambda ev: None)
    follower.start()
    try:
        prev: RouterRecord | None = None
        for _ in range(3):
            if prev is not None:
                stopper = RouterManager(cfg, t)
                await stopper.write_record(replace(prev, start_time=prev.start_time + STEP))
                st = await stopper.stop()
                assert not st.already, st
            rec, new = await RouterManager(cfg, t).start()
            started.append(rec.pid)
            assert new
            if prev is not None:
                await wait_gone(prev.pid)  # the old router
            follower.poke()
            await wait_for(
                lambda: follower.view.pid == rec.pid and follower.view.router_state is RouterState.RUNNING,  # noqa: B023
                30, what="the follower on the new router",
            )  # fmt: skip
            prev = rec
        assert prev is not None
        assert not (await RouterManager(cfg, t).stop()).already
        await wait_gone(prev.pid)
    finally:
        await follower.close()


@pytest.mark.ssh
async def test_every_path_gives_the_same_boot_relative_start(sshd: SshServer, tmp_path: Path) -> None:
    """psutil's side and every ssh script (start-time, spawn, look) read the same boot id and start since boot."""
    t = ssh_transport(sshd)
    here = LocalTransport()
    m = RouterManager(MachineConfig(name="box", host=sshd.host, router=f"paths-{tmp_path.name}"), t)
    pid = await t.spawn_detached(["sleep", "120"], log_path=str(tmp_path / "sleep.log"))
    try:
        with_spawn = await t.process_start(pid)  # read in the spawn's own request
        local = await here.process_start(pid)
        by_script = await t.live_start(pid)
        await m.write_record(RouterRecord(pid=pid, start_time=0.0, port=1, program="x", preset="p", log="l"))
        _, by_look, _ = await m._look()
        starts = [with_spawn, local, by_script, by_look]
        assert all(s is not None and s.boot_relative for s in starts), starts
        assert len({(s.boot_id, s.since_boot) for s in starts if s is not None}) == 1, starts
        assert all(s is not None and local is not None and abs(s.epoch - local.epoch) <= 0.01 for s in starts)
    finally:
        stop(pid)
        await t.close()


@pytest.mark.ssh
async def test_confirming_a_start_over_ssh_survives_a_clock_step(
    sshd: SshServer, tmp_path: Path, sleeper: psutil.Process
) -> None:
    """The shell check of _CONFIRM_RUNNING (seconds after the spawn) decides as same_process does."""
    t = ssh_transport(sshd)
    m = RouterManager(MachineConfig(name="box", host=sshd.host, router=f"step-{tmp_path.name}"), t)
    try:
        live = await t.process_start(sleeper.pid)
        assert live is not None and live.since_boot is not None
        rec = RouterRecord(pid=sleeper.pid, start_time=live.epoch, port=1, program="x", preset="p", log="l",
                           state=RouterState.STARTING).with_start(live)  # fmt: skip
        async with m._machine_lock():
            await m.write_record(rec)
            reused = rec.with_start(replace(live, since_boot=live.since_boot - 1.0))  # the epoch start matches
            assert await m._confirm_running(reused) is False
            assert await m.read_record() == rec
            stepped = replace(rec, start_time=rec.start_time + STEP)
            assert await m._confirm_running(stepped) is True
            after = await m.read_record()
            assert after is not None and after.state is RouterState.RUNNING
    finally:
        await t.close()
