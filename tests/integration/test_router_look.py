"""The record, its process and its key in one request over ssh (app/services/lifecycle/look_request.py), against the
real sshd; the process a record names is a real one started here (the far side is this machine). No mocks."""

from __future__ import annotations

import posixpath
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from app.config import MachineConfig
from app.services.core.router_types import RouterState
from app.services.hosts.process_start import ProcStart
from app.services.hosts.shell_scripts import MISSING
from app.services.lifecycle.look_request import parse_look
from app.services.lifecycle.manager import RouterManager, RouterRecord
from app.services.lifecycle.start_prepare import CHANGED, DONE
from tests.helpers.processes import stop
from tests.helpers.sshd import SshServer, ssh_transport

pytestmark = pytest.mark.ssh


@pytest.fixture
def sleeper() -> Iterator[psutil.Process]:
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield psutil.Process(p.pid)
    stop(p.pid)
    p.wait()


def record_for(p: psutil.Process, **kw: object) -> RouterRecord:
    vals: dict[str, object] = dict(pid=p.pid, start_time=p.create_time(), port=1, program="x", preset="p", log="l")
    vals.update(kw)
    return RouterRecord(**vals)  # type: ignore[arg-type]


async def test_one_request_says_record_process_and_key(
    sshd: SshServer, tmp_path: Path, sleeper: psutil.Process
) -> None:
    t = ssh_transport(sshd)
    m = RouterManager(MachineConfig(name="box", host=sshd.host, router=f"look-{tmp_path.name}"), t)
    try:
        assert await m.look() == (None, False)
        rec = record_for(sleeper, requires_key=True)
        await m.write_record(rec)
        await t.write_file_atomic(await m.key_path(), b"sekrit-key\n")
        before = t.agent.agent.requests if t.agent.agent else 0
        assert await m.look() == (rec, True)
        assert t.agent.agent is not None and t.agent.agent.requests - before == 1
        assert await m.client_key(rec) == "sekrit-key"  # taken from the look: no request of its own
        assert t.agent.agent.requests - before == 1
        # the same pid with another start time is another process (a reused pid)
        other = record_for(sleeper, start_time=sleeper.create_time() - 100, state=RouterState.STOPPING)
        await m.write_record(other)
        assert await m.look() == (other, False)
        stop(sleeper.pid)  # a zombie until reaped: not the router any more
        await m.write_record(rec)
        assert await m.look() == (rec, False)
        assert (await m.inspect()).state is RouterState.EXITED
        await t.write_file_atomic(await m.record_path(), b"{not json")
        assert await m.look() == (None, False)
    finally:
        await t.close()


def test_answers_that_are_not_one_are_not_used() -> None:
    none = parse_look(MISSING, b"/s/llamaherd/routers/r\n-1\n")
    assert none is not None and none.record is None and none.key_file == b"" and not none.key_exists
    keyed = parse_look(MISSING, b"/d\n3\nkey")
    assert keyed is not None and keyed.key_file == b"key" and keyed.key_exists
    locked = parse_look(MISSING, b"/d\n-2\n")
    assert locked is not None and locked.key_file is None and locked.key_exists
    assert parse_look(MISSING, b"two\nlines\n") is None
    assert parse_look(1, b"") is None
    assert parse_look(0, b"/d\n-1\n\nnot-a-number\n100\nbtime 1\n\n\n{}") is None
    assert parse_look(0, b"/d\n99\nshort") is None  # a key longer than what came
    gone = parse_look(0, b"/d\n3\nkey\n12\n100\nbtime 1\n\n\n{}")
    assert gone is not None and gone.start is None and gone.key_file == b"key" and gone.record == b"{}"
    stat = b"12 (x y) %s " + b"0 " * 18 + b"500 0 0\n"
    head = b"/d\n-1\n\n12\n100\nbtime 1000\n"
    boot = "0b4a1e3c-7d55-4c8e-9a3f-2f1d6e8b9c10"
    live = parse_look(0, head + boot.encode() + b"\n" + stat.replace(b"%s", b"S") + b"{}")
    assert live is not None and live.start == ProcStart(1005.0, boot, 5.0) and live.pid == 12
    # no boot id (none readable there, or not a boot id): the epoch start alone
    for no_boot in (b"", b"$(reboot)"):
        bare = parse_look(0, head + no_boot + b"\n" + stat.replace(b"%s", b"S") + b"{}")
        assert bare is not None and bare.start == ProcStart(1005.0)
    zombie = parse_look(0, head + boot.encode() + b"\n" + stat.replace(b"%s", b"Z") + b"{}")
    assert zombie is not None and zombie.start is None


async def test_taking_the_start_lock_over_ssh_brings_the_look(
    sshd: SshServer, tmp_path: Path, sleeper: psutil.Process
) -> None:
    t = ssh_transport(sshd)
    m = RouterManager(MachineConfig(name="box", host=sshd.host, router=f"lock-{tmp_path.name}"), t)
    try:
        async with m._machine_lock() as found:
            assert found is not None and found.record is None and found.directory == await m.state_dir()
            assert found.key_file == b"" and not found.key_exists
        rec = record_for(sleeper)
        await m.write_record(rec)
        await t.write_file_atomic(await m.key_path(), b"k-1\n")
        async with m._machine_lock() as found:
            assert found is not None and found.key_file == b"k-1" and await m.look(found) == (rec, True)
            # held: a second taker is refused until it is released
            assert (await m._private_dirs(posixpath.join(await m.state_dir(), "start.lock"))) == (False, None)
    finally:
        await t.close()


async def test_stop_over_ssh_marks_the_record_then_signals(
    sshd: SshServer, tmp_path: Path, sleeper: psutil.Process
) -> None:
    t = ssh_transport(sshd)
    m = RouterManager(MachineConfig(name="box", host=sshd.host, router=f"stop-{tmp_path.name}"), t)
    try:
        await m.write_record(record_for(sleeper))
        st = await m.stop()
        assert st.state is RouterState.STOPPED and not st.already, st
        assert sleeper.status() == psutil.STATUS_ZOMBIE  # SIGTERM reached it (our child: nobody reaps it yet)
        after = await m.read_record()
        assert after is not None and after.state is RouterState.STOPPING and after.stopped_at > 0
        again = await m.stop()
        assert again.already and again.state is RouterState.STOPPED and again.reason == "stopped on request"
    finally:
        await t.close()


async def test_confirming_a_start_over_ssh_checks_the_process_then_writes_then_releases(
    sshd: SshServer, tmp_path: Path, sleeper: psutil.Process
) -> None:
    t = ssh_transport(sshd)
    m = RouterManager(MachineConfig(name="box", host=sshd.host, router=f"confirm-{tmp_path.name}"), t)
    lock = posixpath.join(await m.state_dir(), "start.lock")
    try:
        starting = record_for(sleeper, state=RouterState.STARTING)
        async with m._machine_lock():
            await m.write_record(starting)
            # another start time: a reused pid, not our router: nothing written, the lock still held
            assert await m._confirm_running(record_for(sleeper, start_time=sleeper.create_time() - 5)) is False
            assert await m.read_record() == starting and await t.stat(lock) is not None
            # within the 1 s tolerance: the record says running, and the lock was released in the same request
            before = t.agent.agent.requests if t.agent.agent else 0
            assert await m._confirm_running(record_for(sleeper, start_time=sleeper.create_time() + 0.5)) is True
            assert t.agent.agent is not None and t.agent.agent.requests - before == 1
            after = await m.read_record()
            assert after is not None and after.state is RouterState.RUNNING and after.pid == sleeper.pid
            assert await t.stat(lock) is None
            await t.run(["mkdir", lock])  # somebody else's now: leaving the block must not remove it
        assert await t.stat(lock) is not None
        await t.run(["rmdir", lock])
        stop(sleeper.pid)  # a zombie is not the router
        assert await m._confirm_running(starting) is False
        assert (await m.read_record()) == after
    finally:
        await t.close()


async def test_the_lock_request_does_the_next_steps_only_when_the_look_inside_finds_the_same(
    sshd: SshServer, tmp_path: Path, sleeper: psutil.Process
) -> None:
    t = ssh_transport(sshd)
    m = RouterManager(MachineConfig(name="box", host=sshd.host, router=f"prep-{tmp_path.name}"), t)
    try:
        gone = record_for(sleeper, pid=2**22 + 1, state=RouterState.RUNNING)  # a pid that is no process
        await m.write_record(gone)
        await t.write_file_atomic(await m.key_path(), b"k-1\n")
        assert await m.look() == (gone, False)
        m._plan = m._start_plan()
        assert m._plan is not None and m._plan[1] == "k-1"  # the key file's key is kept
        async with m._machine_lock() as found:
            prepared = m._prepared
            assert prepared is not None and prepared.status == DONE, prepared
            assert sshd.port in prepared.used_ports  # the port list came along
            assert prepared.log is None and prepared.preset is None  # neither exists yet
            assert await m.read_record() is None  # the old record removed
            assert found is not None and found.record is not None  # the look was taken before that
        assert await t.read_file(await m.key_path()) == b"k-1\n"

        # another llamaherd started one between the look and the lock: nothing is changed, the look says so
        assert await m.look() == (None, False)
        m._plan = m._start_plan()
        assert m._plan is not None
        alive = record_for(sleeper)
        await m.write_record(alive)
        await t.write_file_atomic(await m.key_path(), b"k-other\n")
        async with m._machine_lock() as found:
            prepared = m._prepared
            assert prepared is not None and prepared.status == CHANGED
            assert await m.read_record() == alive
            assert await t.read_file(await m.key_path()) == b"k-other\n"
            assert await m.look(found) == (alive, True)

        # a live router seen by the look: no plan at all
        assert await m.look() == (alive, True)
        assert m._start_plan() is None
    finally:
        await t.close()


@pytest.mark.parametrize("agent", [True, False], ids=["agent", "per-command"])
async def test_a_fresh_start_over_ssh_leaves_a_running_record_the_key_and_no_lock(
    sshd: SshServer, tmp_path: Path, llama_server: str, agent: bool
) -> None:
    t = ssh_transport(sshd, agent=agent)
    cfg = MachineConfig(name="box", host=sshd.host, router=f"fresh-{tmp_path.name}", program=llama_server)
    m = RouterManager(cfg, t)
    rec = None
    try:
        stale = RouterRecord(pid=2**22 + 1, start_time=1.0, port=1, program="x", preset="p", log="l")
        await m.write_record(stale)  # a router that exited without being asked: cleared by the start
        m.ask_early()
        rec, started = await m.start()
        assert started and rec.state is RouterState.RUNNING
        assert await m.read_record() == rec
        assert await t.stat(posixpath.join(await m.state_dir(), "start.lock")) is None
        key = await m.read_key()
        assert key and await m.client_key(rec) == key
        assert b"; models.ini for llama-server router mode, made by llamaherd" in await t.read_file(rec.preset)
        again, started = await m.start()
        assert again == rec and not started
    finally:
        if rec is not None:
            await m.stop()
        await t.close()
