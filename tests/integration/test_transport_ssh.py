"""SshTransport against a real OpenSSH sshd on 127.0.0.1 (with and without SFTP). No mocks.

The server is this same machine, so a test can check from here (psutil, the filesystem) what the remote side did.
The contract both transports keep is tested once, in test_transport_contract.py; here is what only ssh has.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import stat
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path

import psutil
import pytest

from app.services.core.errors import HostKeyError, TransportError
from app.services.core.host_types import Connection, GpuStats
from app.services.ssh.transport import SshTransport
from tests.helpers.processes import gone_or_zombie, pending_signals, stop, weird_args
from tests.helpers.sshd import SshServer, ssh_transport
from tests.helpers.wait import wait_for

pytestmark = pytest.mark.ssh


@pytest.fixture
async def ssh(any_sshd: SshServer) -> AsyncIterator[SshTransport]:
    t = ssh_transport(any_sshd)
    await t.connect()
    yield t
    await t.close()


@pytest.fixture
async def ssh1(sshd: SshServer) -> AsyncIterator[SshTransport]:
    """Over the SFTP server only, for tests where the subsystem makes no difference."""
    t = ssh_transport(sshd)
    await t.connect()
    yield t
    await t.close()


def sh(argv: list[str]) -> bytes:
    return subprocess.run(argv, capture_output=True, check=True).stdout


# ---- commands ----


async def test_many_commands_at_once(ssh1: SshTransport) -> None:
    # More commands at once than OpenSSH's MaxSessions (10): they queue instead of being refused.
    results = await asyncio.gather(*(ssh1.run(["sh", "-c", f"sleep 0.2; echo {i}"]) for i in range(25)))
    assert [r.stdout for r in results] == [f"{i}\n".encode() for i in range(25)]


# ---- files ----


async def test_big_file(ssh: SshTransport, any_sshd: SshServer, tmp_path: Path) -> None:
    assert not ssh.is_local and ssh.state == Connection.CONNECTED
    # Larger than one shell argument may be (128 KiB), so the no-SFTP path has to switch to stdin.
    data = os.urandom(300_000)
    path = str(tmp_path / "big.bin")
    await ssh.write_file_atomic(path, data)
    assert ssh.has_sftp is any_sshd.sftp
    assert Path(path).read_bytes() == data
    assert await ssh.read_file(path) == data


async def test_expand_and_state_dir(ssh1: SshTransport) -> None:
    home = (await ssh1.run(["sh", "-c", 'printf %s "$HOME"'])).stdout.decode()  # the fixture's remote home
    assert await ssh1.expand("~/models") == f"{home}/models"
    assert await ssh1.expand("$HOME/$(x)") == f"{home}/$(x)"
    # the fixture's sshd sets XDG_STATE_HOME for its sessions (tests/helpers/sshd.py), so the remote's own value wins
    state_home = (await ssh1.run(["sh", "-c", 'printf %s "${XDG_STATE_HOME:-$HOME/.local/state}"'])).stdout.decode()
    assert state_home.endswith("remote-state")
    assert await ssh1.state_dir() == f"{state_home}/llamaherd"


# ---- processes ----


async def test_spawn_detached_survives_close_and_cut(any_sshd: SshServer, tmp_path: Path) -> None:
    t = ssh_transport(any_sshd)
    log = tmp_path / "logs" / "router.log"
    args, pwned = weird_args(tmp_path)
    pid = await t.spawn_detached(
        ["sh", "-c", 'printf "%s|" "$@"; echo "cwd=$(pwd) v=$V"; exec sleep 30', "sh", *args],
        log_path=str(log),
        env={"V": "$(touch x) 'q'"},
        cwd=str(tmp_path),
    )
    try:
        p = psutil.Process(pid)
        await wait_for(lambda: p.name() == "sleep", what="exec into sleep")
        assert os.getsid(pid) == pid
        assert stat.S_IMODE(log.stat().st_mode) == 0o600
        await wait_for(lambda: "v=" in log.read_text(), what="log written")
        assert log.read_text() == "".join(a + "|" for a in args) + f"cwd={tmp_path} v=$(touch x) 'q'\n"
        assert not pwned.exists() and not (tmp_path / "x").exists()
        await t.close()
        # cut_connections returns once every session process is gone: a hangup would have been sent by then
        any_sshd.cut_connections()
        assert not pending_signals(pid) & {signal.SIGHUP, signal.SIGTERM, signal.SIGKILL}
        assert p.is_running() and p.status() != psutil.STATUS_ZOMBIE
        t2 = ssh_transport(any_sshd)
        try:
            assert await t2.pid_alive(pid)
            assert await t2.kill(pid, signal.SIGTERM)
            await wait_for(lambda: gone_or_zombie(pid, timeout=0), what="process ended")
            assert not await t2.pid_alive(pid)
            assert not await t2.kill(2**22 + 1, signal.SIGTERM)
        finally:
            await t2.close()
    finally:
        stop(pid)


async def test_host_stats_with_fake_gpu(ssh1: SshTransport, sshd: SshServer) -> None:
    first = await ssh1.host_stats()
    assert first.mem_total > first.mem_used > 0 and first.gpus == ()
    fake = sshd.fake_bin / "nvidia-smi"
    fake.write_text("#!/bin/sh\necho 'Fake GPU 0, 1024, 8192, 37'\n")
    fake.chmod(0o755)
    try:
        await asyncio.sleep(0.1)
        s = await ssh1.host_stats()
    finally:
        fake.unlink()
    assert 0.0 <= s.cpu_pct <= 100.0
    assert s.gpus == (GpuStats("Fake GPU 0", 1024, 8192, 37),)
    assert abs(s.mem_total - psutil.virtual_memory().total) < 1 << 20


# ---- tail ----


async def _collect(it: AsyncIterator[str], out: list[str]) -> None:
    async for line in it:
        out.append(line)


async def test_tail_ends_with_error_when_the_link_drops(sshd: SshServer, tmp_path: Path) -> None:
    t = ssh_transport(sshd)
    log = tmp_path / "x.log"
    log.write_text("one\n")
    got: list[str] = []
    task = asyncio.create_task(_collect(t.tail(str(log)), got))
    try:
        await wait_for(lambda: got == ["one"], what="first line")
        sshd.cut_connections()
        with pytest.raises(TransportError, match="following"):
            await asyncio.wait_for(task, 5)
    finally:
        task.cancel()
        await t.close()


# ---- port forwards and reconnects ----


async def test_forward_port_comes_back_on_the_same_port(sshd: SshServer) -> None:
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(1024):
            writer.write(b"echo:" + data)
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    remote_port = server.sockets[0].getsockname()[1]
    t = ssh_transport(sshd)
    states: list[Connection] = []
    t.on_state_change = lambda s, _r: states.append(s)

    async def ask(port: int) -> bytes:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            writer.write(b"ping")
            await writer.drain()
            return await asyncio.wait_for(reader.read(100), 2)
        finally:
            writer.close()

    try:
        local_port = await t.forward_port(remote_port)
        assert local_port != remote_port
        assert await t.forward_port(remote_port) == local_port  # reused
        assert await ask(local_port) == b"echo:ping"
        assert t.connects == 1
        assert sshd.cut_connections() > 0

        async def answers() -> bool:
            try:
                return await ask(local_port) == b"echo:ping"
            except (OSError, TimeoutError):
                return False

        await wait_for(answers, 8, step=0.1, what="the forward back on its local port")
        assert t.connects == 2
        assert await t.forward_port(remote_port) == local_port
        assert Connection.CONNECTING in states and states[-1] == Connection.CONNECTED
    finally:
        await t.close()
        server.close()
        await server.wait_closed()


async def test_a_warmed_forward_carries_the_next_connection_on_the_channel_opened_ahead(
    sshd: SshServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(1024):
            writer.write(b"echo:" + data)
            await writer.drain()
        writer.close()

    trace = tmp_path / "trace"
    monkeypatch.setenv("LLAMAHERD_TRACE_REMOTE", str(trace))
    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    t = ssh_transport(sshd)
    try:
        local_port = await t.forward_port(server.sockets[0].getsockname()[1])
        for _ in range(3):
            t.warm_forward(local_port)  # two ahead at most (WARM_MAX: a status sends two requests at once)
        await wait_for(lambda: trace.read_text().count(" channel ") == 2, 5, what="the channels opened ahead")
        for _ in range(3):  # the first two take the warm channels, the third opens its own
            reader, writer = await asyncio.open_connection("127.0.0.1", local_port)
            writer.write(b"ping")
            await writer.drain()
            assert await asyncio.wait_for(reader.read(100), 5) == b"echo:ping"
            writer.close()
        assert trace.read_text().count(" channel ") == 3
    finally:
        await t.close()
        server.close()
        await server.wait_closed()


async def test_alias_from_ssh_config(sshd: SshServer, tmp_path: Path) -> None:
    cfg = tmp_path / "ssh_config"
    cfg.write_text(sshd.ssh_config("gpubox"))
    t = SshTransport("gpubox", "gpubox", known_hosts=sshd.known_hosts, ssh_config=str(cfg))
    try:
        r = await t.run(["echo", "via alias"])
        assert r.stdout == b"via alias\n"
    finally:
        await t.close()


# ---- host keys ----


async def test_unknown_host_key_is_refused_with_how_to_accept(sshd: SshServer, tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    known.write_text("")
    t = ssh_transport(sshd, known_hosts=str(known))
    try:
        with pytest.raises(HostKeyError) as ei:
            await t.connect()
        msg = str(ei.value)
        assert "not known" in msg and "127.0.0.1" in msg
        assert f"ssh-keyscan -p {sshd.port} 127.0.0.1 >> {known}" in msg
        assert "accept_new_host_key = true" in msg
        assert t.state == Connection.UNREACHABLE and "not known" in t.state_reason
        assert known.read_text() == ""  # never accepted silently
        with pytest.raises(HostKeyError):
            await t.run(["true"])
    finally:
        await t.close()
    # following the advice works
    known.write_bytes(sh(["ssh-keyscan", "-p", str(sshd.port), "-t", "ed25519", "127.0.0.1"]))
    t = ssh_transport(sshd, known_hosts=str(known))
    try:
        assert (await t.run(["true"])).ok
    finally:
        await t.close()


async def test_accept_new_host_key_records_it(sshd: SshServer, tmp_path: Path) -> None:
    known = tmp_path / "new" / "known_hosts"
    t = ssh_transport(sshd, known_hosts=str(known), accept_new_host_key=True)
    try:
        assert (await t.run(["true"])).ok
    finally:
        await t.close()
    assert known.read_text() == sshd.host_key_line + "\n"
    assert stat.S_IMODE(known.stat().st_mode) == 0o600
    t = ssh_transport(sshd, known_hosts=str(known))  # now known without accepting anything new
    try:
        assert (await t.run(["true"])).ok
    finally:
        await t.close()
    assert known.read_text() == sshd.host_key_line + "\n"


@pytest.mark.parametrize("key_type", ["ed25519", "rsa"])
async def test_changed_host_key_is_always_refused(
    sshd: SshServer,
    tmp_path: Path,
    key_type: str,
) -> None:
    # rsa: known_hosts holds a key of a type the server no longer has; that is a changed key too, not a
    # handshake that dies with "connection reset".
    other = tmp_path / "other_key"
    sh(["ssh-keygen", "-q", "-t", key_type, "-N", "", "-f", str(other)])
    alg, b64 = Path(f"{other}.pub").read_bytes().decode().split()[:2]
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:{sshd.port} {alg} {b64}\n")
    t = ssh_transport(sshd, known_hosts=str(known), accept_new_host_key=True)
    try:
        with pytest.raises(HostKeyError) as ei:
            await t.connect()
        assert "CHANGED" in str(ei.value) and "ssh-keygen" in str(ei.value)
    finally:
        await t.close()
    assert known.read_text() == f"[127.0.0.1]:{sshd.port} {alg} {b64}\n"


# ---- unreachable machines ----


async def test_unreachable_fails_fast_and_never_blocks_another(sshd: SshServer) -> None:
    # A "machine" that accepts TCP and then says nothing: the worst case for a client.
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(30)
        writer.close()

    black_hole = await asyncio.start_server(silent, "127.0.0.1", 0)
    hole_port = black_hole.sockets[0].getsockname()[1]
    bad = ssh_transport(sshd, port=hole_port, connect_timeout=1.5)
    good = ssh_transport(sshd)
    loop = asyncio.get_running_loop()
    try:
        t0 = loop.time()
        bad_call = asyncio.ensure_future(bad.run(["true"]))
        await wait_for(lambda: bad.state == Connection.CONNECTING, what="the bad machine connecting")
        assert (await good.run(["echo", "fine"])).stdout == b"fine\n"
        assert loop.time() - t0 < 1.0  # the good machine did not wait for the bad one
        with pytest.raises(TransportError):
            await bad_call
        assert loop.time() - t0 < 5.0
        assert bad.state == Connection.UNREACHABLE
        t1 = loop.time()
        with pytest.raises(TransportError, match="retrying"):
            await bad.run(["true"])  # inside the backoff: an answer at once, with the reason
        assert loop.time() - t1 < 0.2
    finally:
        await bad.close()
        await good.close()
        black_hole.close()


@pytest.mark.timing
async def test_refused_port(sshd: SshServer) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t = ssh_transport(sshd, port=port)
    start = time.monotonic()
    try:
        with pytest.raises(TransportError, match="cannot connect"):
            await t.connect()
        assert time.monotonic() - start < 2
    finally:
        await t.close()
