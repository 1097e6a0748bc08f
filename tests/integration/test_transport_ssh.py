"""SshTransport against a real OpenSSH sshd on 127.0.0.1 (with and without SFTP). No mocks.

The server is this same machine, so a test can check from here (psutil, the filesystem) what the remote side did.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import stat
import subprocess
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import psutil
import pytest

from app.services.errors import HostKeyError, TransportError
from app.services.local_transport import LocalTransport
from app.services.ssh_transport import SshTransport
from app.services.transport import same_start
from app.services.types import Connection, GpuStats
from tests.integration.test_transport_local import gone_or_zombie, settled, weird_args
from tests.sshd import SshServer

pytestmark = pytest.mark.ssh


def make(server: SshServer, **kw: object) -> SshTransport:
    opts: dict[str, object] = {
        "port": server.port,
        "user": server.user,
        "identity_file": server.client_key,
        "known_hosts": server.known_hosts,
        "ssh_config": os.devnull,  # this machine's ~/.ssh/config has no say in tests
    }
    opts.update(kw)
    return SshTransport("box", server.host, **opts)  # type: ignore[arg-type]


@pytest.fixture(params=["sftp", "nosftp"])
def server(request: pytest.FixtureRequest) -> SshServer:
    name = "sshd" if request.param == "sftp" else "sshd_nosftp"
    s: SshServer = request.getfixturevalue(name)
    return s


@pytest.fixture
async def ssh(server: SshServer) -> AsyncIterator[SshTransport]:
    t = make(server)
    await t.connect()
    yield t
    await t.close()


@pytest.fixture
async def ssh1(sshd: SshServer) -> AsyncIterator[SshTransport]:
    """Over the SFTP server only, for tests where the subsystem makes no difference."""
    t = make(sshd)
    await t.connect()
    yield t
    await t.close()


async def wait_for(cond: Callable[[], bool], timeout: float = 8.0, what: str = "condition") -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while loop.time() < end:
        if cond():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{what} not met within {timeout} s")


def content(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def sh(argv: list[str]) -> bytes:
    return subprocess.run(argv, capture_output=True, check=True).stdout


def stop(pid: int) -> None:
    assert gone_or_zombie(pid, kill=True)


# ---- commands ----


async def test_run_stdin_and_literal_argv(ssh: SshTransport, tmp_path: Path) -> None:
    assert not ssh.is_local and ssh.state == Connection.CONNECTED
    r = await ssh.run(["cat"], input=b"hello\x00\xffworld")
    assert r.ok and r.stdout == b"hello\x00\xffworld"
    r = await ssh.run(["cat"])  # no input: stdin is at EOF, never a hang
    assert r.ok and r.stdout == b""
    args, pwned = weird_args(tmp_path)
    r = await ssh.run(["printf", "%s\n", *args])
    assert r.stdout.decode() == "".join(a + "\n" for a in args)
    assert not pwned.exists()
    r = await ssh.run(["sh", "-c", "echo err >&2; exit 7"])
    assert (r.returncode, r.stderr) == (7, b"err\n")
    r = await ssh.run(["/no/such/program"])
    assert r.returncode == 127


async def test_run_timeout_and_many_at_once(ssh1: SshTransport) -> None:
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    with pytest.raises(TransportError, match="timed out"):
        await ssh1.run(["sleep", "10"], timeout=0.3)
    assert loop.time() - t0 < 3
    # More commands at once than OpenSSH's MaxSessions (10): they queue instead of being refused.
    results = await asyncio.gather(*(ssh1.run(["sh", "-c", f"sleep 0.2; echo {i}"]) for i in range(25)))
    assert [r.stdout for r in results] == [f"{i}\n".encode() for i in range(25)]


# ---- files ----


async def test_files(ssh: SshTransport, server: SshServer, tmp_path: Path) -> None:
    path = str(tmp_path / "state dir" / "it's" / "preset.ini")
    data = bytes(range(256)) * 4 + b"\n[model]\nkey = $(touch pwned) 'q'\n"
    await ssh.write_file_atomic(path, data)
    assert ssh.has_sftp is server.sftp
    assert content(path) == data
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert await ssh.read_file(path) == data
    assert await ssh.read_head(path, 7) == data[:7]
    info = await ssh.stat(path)
    assert info is not None and info.size == len(data)
    assert abs(info.mtime - os.stat(path).st_mtime) < 0.01
    await ssh.write_file_atomic(path, b"second", mode=0o640)
    assert content(path) == b"second"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    assert os.listdir(Path(path).parent) == ["preset.ini"]  # no temp file left behind
    dst = str(tmp_path / "-moved.ini")
    await ssh.rename(path, dst)
    assert await ssh.stat(path) is None
    assert await ssh.stat(dst) is not None
    await ssh.remove(dst)
    await ssh.remove(dst)  # missing is fine
    with pytest.raises(FileNotFoundError):
        await ssh.read_file(dst)
    with pytest.raises(FileNotFoundError):
        await ssh.read_head(dst, 1)
    with pytest.raises(FileNotFoundError):
        await ssh.rename(dst, path)
    assert not (tmp_path / "pwned").exists()


async def test_big_file(ssh: SshTransport, tmp_path: Path) -> None:
    # Larger than one shell argument may be (128 KiB), so the no-SFTP path has to switch to stdin.
    data = os.urandom(300_000)
    path = str(tmp_path / "big.bin")
    await ssh.write_file_atomic(path, data)
    assert content(path) == data
    assert await ssh.read_file(path) == data


async def test_list_files_and_expand(ssh1: SshTransport, tmp_path: Path) -> None:
    (tmp_path / "m" / "sub" / "deeper").mkdir(parents=True)
    for rel in ["m/a.gguf", "m/sub/b b.gguf", "m/sub/deeper/c.gguf", "m/notes.txt"]:
        (tmp_path / rel).write_bytes(b"x" * 3)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "link.gguf").symlink_to(tmp_path / "m" / "a.gguf")
    dirs = [str(tmp_path / "m"), str(tmp_path / "other") + "/", str(tmp_path / "missing")]
    got = await ssh1.list_files(dirs)
    local = await LocalTransport().list_files(dirs)
    assert [f.path for f in got] == [
        str(tmp_path / "m" / "a.gguf"),
        str(tmp_path / "m" / "sub" / "b b.gguf"),
        str(tmp_path / "other" / "link.gguf"),
    ]
    assert [(f.path, f.size) for f in got] == [(f.path, f.size) for f in local]
    assert all(abs(a.mtime - b.mtime) < 0.01 for a, b in zip(got, local, strict=True))
    home = (await ssh1.run(["sh", "-c", 'printf %s "$HOME"'])).stdout.decode()  # the fixture's remote home
    assert await ssh1.expand("~/models") == f"{home}/models"
    assert await ssh1.expand("$HOME/$(x)") == f"{home}/$(x)"
    # the fixture's sshd sets XDG_STATE_HOME for its sessions (tests/sshd.py), so the remote's own value wins
    state_home = (await ssh1.run(["sh", "-c", 'printf %s "${XDG_STATE_HOME:-$HOME/.local/state}"'])).stdout.decode()
    assert state_home.endswith("remote-state")
    assert await ssh1.state_dir() == f"{state_home}/llamaherd"


# ---- processes ----


async def test_spawn_detached_survives_close_and_cut(server: SshServer, tmp_path: Path) -> None:
    t = make(server)
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
        server.cut_connections()
        await asyncio.sleep(0.3)
        assert p.is_running() and p.status() != psutil.STATUS_ZOMBIE
        t2 = make(server)
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


async def test_spawn_missing_program(ssh1: SshTransport, tmp_path: Path) -> None:
    with pytest.raises(TransportError, match="not found"):
        await ssh1.spawn_detached(["/no/such/llama-server", "--port", "1"], log_path=str(tmp_path / "l.log"))


async def test_process_start_time_and_rss_match_local(ssh1: SshTransport, tmp_path: Path) -> None:
    local = LocalTransport()
    pid = await local.spawn_detached(["sh", "-c", "sleep 30 & exec sleep 30"], log_path=str(tmp_path / "p.log"))
    try:
        await wait_for(lambda: settled(pid))
        here = await local.process_start_time(pid)
        there = await ssh1.process_start_time(pid)
        assert here is not None and there == here and same_start(here, there)
        rss = await ssh1.process_tree_rss(pid)
        local_rss = await local.process_tree_rss(pid)
        assert rss is not None and local_rss is not None
        assert rss > psutil.Process(pid).memory_info().rss  # the child counts too
        assert abs(rss - local_rss) < 1 << 20
        assert await ssh1.process_start_time(2**22 + 1) is None
        assert await ssh1.process_tree_rss(2**22 + 1) is None
    finally:
        for c in psutil.Process(pid).children():
            stop(c.pid)
        stop(pid)


async def test_free_port(ssh1: SshTransport) -> None:
    for _ in range(3):
        port = await ssh1.free_port()
        assert 20000 <= port <= 60000
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))
    # a port somebody listens on is never offered
    listeners = {c.laddr.port for c in psutil.net_connections("tcp") if c.status == psutil.CONN_LISTEN}
    ports = {await ssh1.free_port() for _ in range(20)}
    assert not ports & listeners


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


async def test_tail_follows_appends_and_recreate(ssh1: SshTransport, tmp_path: Path) -> None:
    log = tmp_path / "router.log"
    log.write_text("".join(f"old {i}\n" for i in range(50)))
    got: list[str] = []
    task = asyncio.create_task(_collect(ssh1.tail(str(log), lines=3), got))
    try:
        await wait_for(lambda: len(got) >= 3, what="first lines")
        assert got == ["old 47", "old 48", "old 49"]
        with log.open("ab") as f:
            f.write("new \xe9\n".encode() + b"bad \xff\n")
        await wait_for(lambda: len(got) >= 5, what="appended lines")
        assert got[3:] == ["new é", "bad \ufffd"]
        log.unlink()
        log.write_text("recreated\n")
        await wait_for(lambda: "recreated" in got, what="recreated file")
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    # the remote tail stops when we stop reading (no tail left behind on the server)
    await wait_for(lambda: not _remote_tails(str(log)), what="remote tail gone")


def _remote_tails(path: str) -> list[int]:
    out = []
    for p in psutil.process_iter(["name", "cmdline", "status"]):
        if p.info["name"] == "tail" and path in (p.info["cmdline"] or []) and p.info["status"] != "zombie":
            out.append(p.pid)
    return out


async def test_tail_ends_with_error_when_the_link_drops(sshd: SshServer, tmp_path: Path) -> None:
    t = make(sshd)
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
    t = make(sshd)
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
        loop = asyncio.get_running_loop()
        end = loop.time() + 8
        answer = b""
        while loop.time() < end:
            try:
                answer = await ask(local_port)
            except (OSError, TimeoutError):
                answer = b""
            if answer == b"echo:ping":
                break
            await asyncio.sleep(0.1)
        assert answer == b"echo:ping", "the forward did not come back on its local port"
        assert t.connects == 2
        assert await t.forward_port(remote_port) == local_port
        assert Connection.CONNECTING in states and states[-1] == Connection.CONNECTED
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
    t = make(sshd, known_hosts=str(known))
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
    t = make(sshd, known_hosts=str(known))
    try:
        assert (await t.run(["true"])).ok
    finally:
        await t.close()


async def test_accept_new_host_key_records_it(sshd: SshServer, tmp_path: Path) -> None:
    known = tmp_path / "new" / "known_hosts"
    t = make(sshd, known_hosts=str(known), accept_new_host_key=True)
    try:
        assert (await t.run(["true"])).ok
    finally:
        await t.close()
    assert known.read_text() == sshd.host_key_line + "\n"
    assert stat.S_IMODE(known.stat().st_mode) == 0o600
    t = make(sshd, known_hosts=str(known))  # now known without accepting anything new
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
    alg, b64 = content(f"{other}.pub").decode().split()[:2]
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:{sshd.port} {alg} {b64}\n")
    t = make(sshd, known_hosts=str(known), accept_new_host_key=True)
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
    bad = make(sshd, port=hole_port, connect_timeout=1.5)
    good = make(sshd)
    loop = asyncio.get_running_loop()
    try:
        t0 = loop.time()
        bad_call = asyncio.ensure_future(bad.run(["true"]))
        await asyncio.sleep(0.05)
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


async def test_refused_port(sshd: SshServer) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t = make(sshd, port=port)
    start = time.monotonic()
    try:
        with pytest.raises(TransportError, match="cannot connect"):
            await t.connect()
        assert time.monotonic() - start < 2
    finally:
        await t.close()
