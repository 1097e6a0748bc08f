"""The Transport contract, once, over both transports: LocalTransport, and SshTransport against a real OpenSSH
sshd on 127.0.0.1 with and without SFTP. The ssh server is this same machine, so every check reads the result
from here (psutil, the filesystem). What only one transport has stays in test_transport_local.py or
test_transport_ssh.py."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import stat
from collections.abc import AsyncIterator
from pathlib import Path

import psutil
import pytest

from app.services.core.errors import TransportError
from app.services.hosts.local import LocalTransport
from app.services.hosts.process_start import same_start
from app.services.hosts.transport import Transport
from tests.helpers.processes import settled, stop, weird_args
from tests.helpers.sshd import SshServer, ssh_transport
from tests.helpers.wait import wait_for

# "per-command": the path an ssh machine falls back to where the remote agent cannot run (one session a command).
KINDS = ["local"] + [pytest.param(k, marks=pytest.mark.ssh) for k in ("sftp", "nosftp", "per-command")]


@pytest.fixture(params=KINDS)
async def transport(request: pytest.FixtureRequest) -> AsyncIterator[Transport]:
    t: Transport
    if request.param == "local":
        t = LocalTransport()
    else:
        server: SshServer = request.getfixturevalue("sshd" if request.param == "sftp" else "sshd_nosftp")
        t = ssh_transport(server, agent=request.param != "per-command")
    await t.connect()
    yield t
    await t.close()


# ---- commands ----


async def test_run_stdin_and_literal_argv(transport: Transport, tmp_path: Path) -> None:
    r = await transport.run(["cat"], input=b"hello\x00\xffworld")
    assert r.ok and r.stdout == b"hello\x00\xffworld"
    r = await transport.run(["cat"])  # no input: stdin is at EOF, never a hang
    assert r.ok and r.stdout == b""
    args, pwned = weird_args(tmp_path)
    r = await transport.run(["printf", "%s\n", *args])
    assert r.stdout.decode() == "".join(a + "\n" for a in args)
    assert not pwned.exists()
    r = await transport.run(["sh", "-c", "echo err >&2; exit 7"])
    assert (r.returncode, r.stderr, r.ok) == (7, b"err\n", False)
    r = await transport.run(["/no/such/program"])
    assert r.returncode == 127


async def test_run_timeout(transport: Transport) -> None:
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    with pytest.raises(TransportError, match="timed out"):
        await transport.run(["sleep", "10"], timeout=0.3)
    assert loop.time() - t0 < 3


# ---- files ----


async def test_files(transport: Transport, tmp_path: Path) -> None:
    path = str(tmp_path / "state dir" / "it's" / "preset.ini")
    data = bytes(range(256)) * 4 + b"\n[model]\nkey = $(touch pwned) 'q'\n"
    await transport.write_file_atomic(path, data)
    with open(path, "rb") as f:
        assert f.read() == data
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert await transport.read_file(path) == data
    assert await transport.read_head(path, 7) == data[:7]
    info = await transport.stat(path)
    assert info is not None and info.size == len(data)
    assert abs(info.mtime - os.stat(path).st_mtime) < 0.01
    await transport.write_file_atomic(path, b"second", mode=0o640)
    assert await transport.read_file(path) == b"second"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    assert os.listdir(Path(path).parent) == ["preset.ini"]  # no temp file left behind
    dst = str(tmp_path / "-moved.ini")
    await transport.rename(path, dst)
    assert await transport.stat(path) is None
    assert await transport.stat(dst) is not None
    await transport.remove(dst)
    await transport.remove(dst)  # missing is fine
    with pytest.raises(FileNotFoundError):
        await transport.read_file(dst)
    with pytest.raises(FileNotFoundError):
        await transport.read_head(dst, 1)
    with pytest.raises(FileNotFoundError):
        await transport.rename(dst, path)
    assert not (tmp_path / "pwned").exists()


async def test_list_files(transport: Transport, tmp_path: Path) -> None:
    (tmp_path / "m" / "sub" / "deeper").mkdir(parents=True)
    for rel in ["m/a.gguf", "m/sub/b b.gguf", "m/sub/deeper/c.gguf", "m/notes.txt"]:
        (tmp_path / rel).write_bytes(b"x" * 3)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "link.gguf").symlink_to(tmp_path / "m" / "a.gguf")
    got = await transport.list_files([str(tmp_path / "m"), str(tmp_path / "other") + "/", str(tmp_path / "missing")])
    assert [f.path for f in got] == [
        str(tmp_path / "m" / "a.gguf"),
        str(tmp_path / "m" / "sub" / "b b.gguf"),
        str(tmp_path / "other" / "link.gguf"),
    ]
    assert all(f.size == 3 for f in got)
    assert all(abs(f.mtime - os.stat(f.path).st_mtime) < 0.01 for f in got)
    deep = await transport.list_files([str(tmp_path / "m")], max_depth=3)
    assert len(deep) == 3


# ---- processes ----


async def test_spawn_log_mode_and_missing_program(transport: Transport, tmp_path: Path) -> None:
    log = tmp_path / "new" / "dir" / "x.log"
    pid = await transport.spawn_detached(["true"], log_path=str(log))
    stop(pid)
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    with pytest.raises(TransportError, match="not found"):
        await transport.spawn_detached(["/no/such/llama-server", "--port", "1"], log_path=str(log))


async def test_process_facts(transport: Transport, tmp_path: Path) -> None:
    pid = await LocalTransport().spawn_detached(
        ["sh", "-c", "sleep 30 & exec sleep 30"], log_path=str(tmp_path / "p.log")
    )
    try:
        await wait_for(lambda: settled(pid))
        started = await transport.process_start(pid)
        assert started is not None and same_start(started.epoch, psutil.Process(pid).create_time())
        rss = await transport.process_tree_rss(pid)
        assert rss is not None and rss > psutil.Process(pid).memory_info().rss  # the child counts too
        assert await transport.pid_alive(pid)
        assert await transport.process_start(2**22 + 1) is None
        assert await transport.process_tree_rss(2**22 + 1) is None
        assert not await transport.pid_alive(2**22 + 1)
        assert not await transport.kill(2**22 + 1, signal.SIGTERM)
    finally:
        for c in psutil.Process(pid).children():
            stop(c.pid)
        stop(pid)


async def test_free_port(transport: Transport) -> None:
    for _ in range(3):
        port = await transport.free_port()
        assert 20000 <= port <= 60000
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))
    # a port somebody listens on is never offered
    listeners = {c.laddr.port for c in psutil.net_connections("tcp") if c.status == psutil.CONN_LISTEN}
    ports = {await transport.free_port() for _ in range(20)}
    assert not ports & listeners


# ---- tail ----


async def _collect(it: AsyncIterator[str], out: list[str]) -> None:
    async for line in it:
        out.append(line)


def _tail_processes(path: str) -> list[int]:
    out = []
    for p in psutil.process_iter(["name", "cmdline", "status"]):
        if p.info["name"] == "tail" and path in (p.info["cmdline"] or []) and p.info["status"] != "zombie":
            out.append(p.pid)
    return out


async def test_tail_follows_appends_truncation_and_recreate(transport: Transport, tmp_path: Path) -> None:
    log = tmp_path / "router.log"
    log.write_text("".join(f"old {i}\n" for i in range(50)))
    got: list[str] = []
    task = asyncio.create_task(_collect(transport.tail(str(log), lines=3), got))
    try:
        await wait_for(lambda: len(got) >= 3, what="first lines")
        assert got == ["old 47", "old 48", "old 49"]
        with log.open("ab") as f:
            f.write("new \xe9\n".encode() + b"bad \xff\n")
        await wait_for(lambda: len(got) >= 5, what="appended lines")
        assert got[3:] == ["new é", "bad \ufffd"]
        log.write_text("after truncate\n")  # truncated in place, shorter than before
        await wait_for(lambda: "after truncate" in got, what="the truncated file")
        log.unlink()
        log.write_text("recreated\n")
        await wait_for(lambda: "recreated" in got, what="the recreated file")
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    # the tail stops when we stop reading (no tail process left behind, on either side)
    await wait_for(lambda: not _tail_processes(str(log)), what="tail process gone")
