"""The remote agent (one long-lived `sh` per ssh connection) against a real OpenSSH sshd on 127.0.0.1.

The server is this same machine: the remote agent's processes and files are checked from here with psutil.
The transport contract through the agent, and through the per-command path it falls back to, is
test_transport_contract.py; here is what only the agent has.
"""

from __future__ import annotations

import asyncio
import glob
import os
import stat
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import psutil
import pytest

from app.services.core.errors import TransportError
from app.services.core.host_types import Connection
from app.services.ssh.remote_shell import RemoteAgent
from app.services.ssh.remote_shell_script import OUTPUT_LIMIT
from app.services.ssh.transport import SshTransport
from tests.helpers.processes import stop
from tests.helpers.sshd import SshServer, ssh_transport
from tests.helpers.wait import wait_for

pytestmark = pytest.mark.ssh


def sessions(server: SshServer) -> int:
    """ssh sessions the server has started so far (one per command on the per-command path)."""
    return server.log_text().count("Starting session:")


def agent_of(t: SshTransport) -> RemoteAgent:
    a = t.agent.agent
    assert a is not None and a.alive, t.agent.fallback_reason
    return a


def procs_with(marker: str) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline"]):
        if marker in " ".join(p.info["cmdline"] or []):
            found.append(p)
    return found


@pytest.fixture
async def ssh(sshd: SshServer) -> AsyncIterator[SshTransport]:
    t = ssh_transport(sshd)
    await t.connect()
    yield t
    await t.close()


@pytest.mark.timing
async def test_one_session_for_many_pipelined_commands_answered_as_they_finish(
    ssh: SshTransport, sshd: SshServer
) -> None:
    await ssh.run(["true"])  # the agent starts with the first command
    before, agent = sessions(sshd), agent_of(ssh)
    done: list[str] = []

    async def one(tag: str, argv: list[str]) -> None:
        res = await ssh.run(argv)
        assert res.ok and res.stdout.decode().strip() == tag, res
        done.append(tag)

    t0 = time.monotonic()
    await asyncio.gather(
        one("slow", ["sh", "-c", "sleep 1.5; echo slow"]), *(one(f"f{i}", ["echo", f"f{i}"]) for i in range(30))
    )
    # All in flight at once: the quick ones answered while the slow one ran, and not one after another.
    assert done[-1] == "slow" and len(done) == 31
    assert time.monotonic() - t0 < 15
    assert sessions(sshd) == before, "a command opened an ssh session of its own"
    assert agent.requests >= 31
    # Exit status, stderr and bytes that are not text come back as the command gave them.
    res = await ssh.run(["sh", "-c", "printf 'a\\0b\\n@@llamaherd-agent 1 0 0 0 0 0\\n'; echo oops >&2; exit 7"])
    assert (res.returncode, res.stdout, res.stderr) == (7, b"a\0b\n@@llamaherd-agent 1 0 0 0 0 0\n", b"oops\n")
    res = await ssh.run(["printf", "%s", "no newline at the end"])
    assert res.stdout == b"no newline at the end"
    # The link's round trip, measured by the agent (loopback: a few ms of work on the far side at most).
    assert 0 < ssh.round_trip() < 1.0


async def test_output_over_the_limit_is_refused_and_the_agent_stays_in_step(ssh: SshTransport) -> None:
    with pytest.raises(TransportError, match=f"over the {OUTPUT_LIMIT} byte limit"):
        await ssh.run(["head", "-c", str(OUTPUT_LIMIT + 100), "/dev/zero"], timeout=60)
    res = await ssh.run(["echo", "next"])
    assert res.stdout == b"next\n"
    res = await ssh.run(["head", "-c", "300000", "/dev/zero"])
    assert res.stdout == b"\0" * 300000


@pytest.mark.timing
async def test_a_request_past_its_timeout_is_stopped_on_the_far_side(ssh: SshTransport) -> None:
    marker = "31.4159"  # a sleep nobody else runs
    t0 = time.monotonic()
    with pytest.raises(TransportError, match="timed out after 1"):
        await ssh.run(["sh", "-c", f"sleep {marker}; echo late"], timeout=1)
    assert time.monotonic() - t0 < 10
    await wait_for(lambda: not [p for p in procs_with(f"sleep {marker}") if p.status() != psutil.STATUS_ZOMBIE], 10)
    assert (await ssh.run(["echo", "after"])).stdout == b"after\n"


async def test_a_started_process_holds_nothing_of_the_agent(ssh: SshTransport, sshd: SshServer, tmp_path: Path) -> None:
    # The same umask and environment as a session of its own would give.
    per_command = ssh_transport(sshd, agent=False)
    try:
        look = ["sh", "-c", "umask; pwd; env | grep -v -e '^SSH_' -e '^_=' -e '^SHLVL=' -e '^OLDPWD=' | sort"]
        assert (await ssh.run(look)).stdout == (await per_command.run(look)).stdout
    finally:
        await per_command.close()
    pid = await ssh.spawn_detached(["sleep", "30.123"], log_path=str(tmp_path / "s.log"))
    try:
        agent_dir = glob.glob("/tmp/llamaherd-agent.*")
        fds = [os.readlink(f) for f in glob.glob(f"/proc/{pid}/fd/*")]
        assert not [f for f in fds if f.startswith("pipe:") or any(d in f for d in agent_dir)], fds
    finally:
        stop(pid)


@pytest.fixture
def broken_mkfifo(sshd: SshServer) -> Iterator[None]:
    """The remote host's mkfifo fails (a stripped-down box, or a filesystem that refuses FIFOs)."""
    fake = sshd.fake_bin / "mkfifo"
    fake.write_text("#!/bin/sh\necho 'mkfifo: operation not permitted' >&2\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    yield
    fake.unlink()


async def test_where_the_agent_cannot_start_each_command_has_its_own_session(
    sshd: SshServer, broken_mkfifo: None
) -> None:
    t = ssh_transport(sshd)
    try:
        await t.connect()
        before = sessions(sshd)
        assert (await t.run(["echo", "hi"])).stdout == b"hi\n"
        assert t.agent.agent is None and "did not start" in t.agent.fallback_reason
        stats = await t.host_stats()
        assert stats.mem_total > 0
        assert (await t.run(["echo", "again"])).stdout == b"again\n"
        # One failed start of the agent, then one session per command; no second try on this connection.
        assert sessions(sshd) - before == 4
        assert t.agent.starts == 0
    finally:
        await t.close()


async def test_the_agent_starts_again_after_the_link_drops_or_it_dies(sshd: SshServer) -> None:
    t = ssh_transport(sshd)
    try:
        await t.connect()
        await t.run(["true"])
        first = agent_of(t).pid
        assert first is not None and psutil.pid_exists(first) and agent_dir(first) is not None
        sshd.cut_connections()  # every sshd child, the agent with it (killed outright: no trap runs)
        await wait_for(lambda: t.state is Connection.CONNECTED and t.connects == 2, 20)
        assert (await t.run(["echo", "back"])).stdout == b"back\n"
        second = agent_of(t).pid
        assert second not in (None, first) and t.agent.starts == 2
        assert agent_dir(first) is None, "the new agent did not remove the directory the killed one left"
        # The agent's shell dies while the connection stays: the next command starts another.
        assert second is not None
        os.kill(second, 9)
        await wait_for(lambda: not agent_of_alive(t), 10)
        assert (await t.run(["echo", "again"])).stdout == b"again\n"
        third = agent_of(t).pid
        assert third not in (None, first, second) and t.agent.starts == 3
        assert third is not None and agent_dir(third) is not None
    finally:
        await t.close()
    # Closed from our side: the agent sees its stdin end, and removes its directory as it goes.
    await wait_for(lambda: agent_dir(third) is None and not psutil.pid_exists(third), 10)


def agent_of_alive(t: SshTransport) -> bool:
    a = t.agent.agent
    return a is not None and a.alive


def agent_dir(pid: int | None) -> str | None:
    """The private directory of the remote agent with this pid, if it is still there."""
    for d in glob.glob("/tmp/llamaherd-agent.*"):
        try:
            if Path(d, "pid").read_text().strip() == str(pid):
                return d
        except OSError:
            continue
    return None


@pytest.fixture
def chatty_bashrc(sshd: SshServer) -> Iterator[None]:
    """The remote user's .bashrc prints a line and takes 0.3 s (conda, pyenv and nvm init are common)."""
    rc = sshd.workdir / "home" / ".bashrc"
    rc.write_text("echo 'welcome to the gpu box'\necho run >>\"$HOME/bashrc-runs\"\nsleep 0.3\n")
    yield
    rc.unlink()
    (sshd.workdir / "home" / "bashrc-runs").unlink(missing_ok=True)


async def test_the_login_shell_runs_once_and_its_greeting_is_skipped(sshd: SshServer, chatty_bashrc: None) -> None:
    t = ssh_transport(sshd)
    try:
        await t.connect()
        assert (await t.run(["echo", "x"])).stdout == b"x\n"  # the agent starts: the .bashrc runs once
        agent = agent_of(t)
        before = sessions(sshd)
        results = [await t.run(["echo", str(i)]) for i in range(5)]
        assert [r.stdout for r in results] == [f"{i}\n".encode() for i in range(5)]
        assert sessions(sshd) == before and agent_of(t) is agent
        assert (sshd.workdir / "home" / "bashrc-runs").read_text() == "run\n"
    finally:
        await t.close()


async def test_a_command_asked_early_runs_once_with_the_agents_start(
    sshd: SshServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = tmp_path / "trace"
    monkeypatch.setenv("LLAMAHERD_TRACE_REMOTE", str(trace))
    ran = tmp_path / "ran"
    early = ["sh", "-c", 'echo run >>"$1"; echo "$$"', "sh", str(ran)]
    t = ssh_transport(sshd)
    try:
        t.ask_early(early)
        await t.connect()
        first = await t.run(early)  # the answer of the run at start: not sent again
        assert first.ok and first.stdout.strip().isdigit()
        assert ran.read_text() == "run\n"
        assert "(sent at start)" in trace.read_text()
        again = await t.run(early)  # taken once: a second run is a request of its own
        assert again.ok and again.stdout != first.stdout
        assert ran.read_text() == "run\nrun\n"
        # What was measured stays a round trip: the answer already here is not a sample of it.
        assert t.round_trip() > 0
    finally:
        await t.close()


async def test_a_command_asked_early_where_the_agent_cannot_start_runs_once_in_a_session(
    sshd: SshServer, broken_mkfifo: None, tmp_path: Path
) -> None:
    ran = tmp_path / "ran"
    early = ["sh", "-c", 'echo run >>"$1"', "sh", str(ran)]
    t = ssh_transport(sshd)
    try:
        t.ask_early(early)
        await t.connect()
        assert (await t.run(early)).ok
        assert t.agent.agent is None
        assert ran.read_text() == "run\n"
    finally:
        await t.close()


async def test_a_spawned_process_start_time_comes_with_the_spawn(ssh: SshTransport, tmp_path: Path) -> None:
    pid = await ssh.spawn_detached(["sleep", "30"], log_path=str(tmp_path / "spawned.log"))
    try:
        before = agent_of(ssh).requests
        first = await ssh.process_start(pid)
        assert agent_of(ssh).requests == before  # read in the spawn's own request
        assert first is not None and abs(first.epoch - psutil.Process(pid).create_time()) <= 1.0
        again = await ssh.process_start(pid)  # taken once: asked again, it is read afresh
        assert again == first and agent_of(ssh).requests == before + 1
    finally:
        stop(pid)
