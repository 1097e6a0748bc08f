"""LocalTransport against this machine: real processes, real files, no mocks."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import stat
import time
from collections.abc import AsyncIterator
from pathlib import Path

import psutil
import pytest

from app.services.errors import TransportError
from app.services.local_transport import LocalTransport
from app.services.transport import same_start
from app.services.types import Connection, GpuStats

WEIRD = [
    "two words",
    "it's",
    'say "hi"',
    "$(touch {pwned})",
    "`touch {pwned}`",
    "; touch {pwned}",
    "*",
    "$HOME",
    "back\\slash",
    "new\nline",
    "",
]


def weird_args(tmp_path: Path) -> tuple[list[str], Path]:
    pwned = tmp_path / "pwned"
    return [w.format(pwned=pwned) for w in WEIRD], pwned


@pytest.fixture
async def local() -> AsyncIterator[LocalTransport]:
    t = LocalTransport()
    await t.connect()
    yield t
    await t.close()


def settled(pid: int) -> bool:
    """`sh -c "sleep & exec sleep"` has become two sleeps (before that the figures are the wrappers')."""
    p = psutil.Process(pid)
    return p.name() == "sleep" and [c.name() for c in p.children()] == ["sleep"]


def stop(pid: int) -> None:
    """Kill a process a test started, by pid, and wait for it to be gone (or a zombie nobody reaps)."""
    gone_or_zombie(pid, kill=True)


def gone_or_zombie(pid: int, *, kill: bool = False, timeout: float = 3.0) -> bool:
    """Whether pid ended within timeout. A zombie counts as ended: where init does not reap orphans (this
    container's pid 1), a detached process that exited stays a zombie forever."""
    try:
        p = psutil.Process(pid)
        if kill:
            p.kill()
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if p.status() == psutil.STATUS_ZOMBIE:
                return True
            time.sleep(0.02)
    except psutil.NoSuchProcess:
        return True
    return False


async def test_state_and_identity(local: LocalTransport) -> None:
    assert local.is_local and local.state == Connection.LOCAL
    assert await local.forward_port(8123) == 8123


async def test_run_stdin_and_literal_argv(local: LocalTransport, tmp_path: Path) -> None:
    r = await local.run(["cat"], input=b"hello\x00world")
    assert r.ok and r.stdout == b"hello\x00world"
    args, pwned = weird_args(tmp_path)
    r = await local.run(["printf", "%s\n", *args])
    assert r.stdout.decode() == "".join(a + "\n" for a in args)
    assert not pwned.exists()
    r = await local.run(["sh", "-c", "exit 3"])
    assert r.returncode == 3 and not r.ok
    r = await local.run(["/no/such/program"])
    assert r.returncode == 127


async def test_run_timeout(local: LocalTransport) -> None:
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    with pytest.raises(TransportError, match="timed out"):
        await local.run(["sleep", "10"], timeout=0.3)
    assert loop.time() - t0 < 3


async def test_files(local: LocalTransport, tmp_path: Path) -> None:
    path = str(tmp_path / "a" / "b" / "preset.ini")
    data = bytes(range(256)) * 10
    await local.write_file_atomic(path, data)
    assert await local.read_file(path) == data
    assert await local.read_head(path, 5) == data[:5]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    info = await local.stat(path)
    assert info is not None and info.size == len(data)
    await local.write_file_atomic(path, b"new", mode=0o640)
    assert await local.read_file(path) == b"new"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    assert os.listdir(tmp_path / "a" / "b") == ["preset.ini"]  # no temp file left behind
    dst = str(tmp_path / "a" / "moved.ini")
    await local.rename(path, dst)
    assert await local.stat(path) is None
    await local.remove(dst)
    await local.remove(dst)  # missing is fine
    with pytest.raises(FileNotFoundError):
        await local.read_file(dst)
    with pytest.raises(FileNotFoundError):
        await local.read_head(dst, 1)


async def test_list_files(local: LocalTransport, tmp_path: Path) -> None:
    (tmp_path / "m" / "sub" / "deeper").mkdir(parents=True)
    for rel in ["m/a.gguf", "m/sub/b.gguf", "m/sub/deeper/c.gguf", "m/notes.txt"]:
        (tmp_path / rel).write_bytes(b"x" * 3)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "link.gguf").symlink_to(tmp_path / "m" / "a.gguf")
    got = await local.list_files([str(tmp_path / "m"), str(tmp_path / "other"), str(tmp_path / "missing")])
    assert [f.path for f in got] == [
        str(tmp_path / "m" / "a.gguf"),
        str(tmp_path / "m" / "sub" / "b.gguf"),
        str(tmp_path / "other" / "link.gguf"),
    ]
    assert all(f.size == 3 for f in got)
    deep = await local.list_files([str(tmp_path / "m")], max_depth=3)
    assert len(deep) == 3


async def test_expand_and_state_dir(local: LocalTransport, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/someone")
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    assert await local.expand("~/models") == "/home/someone/models"
    assert await local.state_dir() == "/home/someone/.local/state/llamaherd"
    monkeypatch.setenv("XDG_STATE_HOME", "/var/st")
    assert await local.state_dir() == "/var/st/llamaherd"


async def test_spawn_detached_survives_close(tmp_path: Path) -> None:
    t = LocalTransport()
    log = tmp_path / "logs" / "router.log"
    log.parent.mkdir()
    log.write_text("earlier run\n")
    pid = await t.spawn_detached(
        ["sh", "-c", 'echo "cwd=$(pwd) v=$V"; exec sleep 30'],
        log_path=str(log),
        env={"V": "$(touch x) 'q'"},
        cwd=str(tmp_path),
    )
    try:
        await t.close()
        p = psutil.Process(pid)
        # The pid is the program itself once setsid and nohup have exec'd into it, not a wrapper.
        await wait_for(lambda: p.name() == "sleep")
        assert os.getsid(pid) == pid  # own session: no hangup from us reaches it
        assert p.ppid() != os.getpid()  # handed over to init, not our child
        for _ in range(50):
            if "v=" in log.read_text():
                break
            await asyncio.sleep(0.05)
        assert log.read_text() == f"earlier run\ncwd={tmp_path} v=$(touch x) 'q'\n"  # appended
        assert not (tmp_path / "x").exists()
        assert await t.pid_alive(pid)
        assert await t.kill(pid, signal.SIGTERM)
        for _ in range(50):
            if not await t.pid_alive(pid):
                break
            await asyncio.sleep(0.05)
        assert not await t.pid_alive(pid)
    finally:
        stop(pid)


async def test_spawn_log_mode_and_missing_program(local: LocalTransport, tmp_path: Path) -> None:
    log = tmp_path / "new" / "dir" / "x.log"
    pid = await local.spawn_detached(["true"], log_path=str(log))
    stop(pid)
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    with pytest.raises(TransportError, match="not found"):
        await local.spawn_detached(["/no/such/llama-server"], log_path=str(log))


async def test_process_facts(local: LocalTransport, tmp_path: Path) -> None:
    pid = await local.spawn_detached(["sh", "-c", "sleep 30 & exec sleep 30"], log_path=str(tmp_path / "p.log"))
    try:
        await wait_for(lambda: settled(pid))
        started = await local.process_start_time(pid)
        assert started is not None and same_start(started, psutil.Process(pid).create_time())
        rss = await local.process_tree_rss(pid)
        assert rss is not None and rss > psutil.Process(pid).memory_info().rss  # includes the child
        assert await local.process_start_time(2**22 + 1) is None
        assert await local.process_tree_rss(2**22 + 1) is None
        assert not await local.pid_alive(2**22 + 1)
        assert not await local.kill(2**22 + 1, signal.SIGTERM)
    finally:
        for c in psutil.Process(pid).children():
            stop(c.pid)
        stop(pid)


async def test_free_port(local: LocalTransport) -> None:
    port = await local.free_port()
    assert 20000 <= port <= 60000
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))


async def test_host_stats_with_fake_gpu(local: LocalTransport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = await local.host_stats()
    assert first.mem_total > first.mem_used > 0
    assert len(first.load_avg) == 3
    fake = tmp_path / "bin" / "nvidia-smi"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'Fake GPU 0, 1024, 8192, 37'\necho 'Fake GPU 1, 0, 8192, [N/A]'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    await asyncio.sleep(0.2)
    s = await local.host_stats()
    assert 0.0 <= s.cpu_pct <= 100.0
    assert s.gpus == (GpuStats("Fake GPU 0", 1024, 8192, 37), GpuStats("Fake GPU 1", 0, 8192, 0))


async def _collect(it: AsyncIterator[str], out: list[str]) -> None:
    async for line in it:
        out.append(line)


async def wait_for(cond: object, timeout: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while loop.time() < end:
        if callable(cond) and cond():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("condition not met in time")


async def test_tail_follows_appends_truncation_and_recreate(local: LocalTransport, tmp_path: Path) -> None:
    log = tmp_path / "router.log"
    log.write_text("".join(f"old {i}\n" for i in range(300)) + "partial")
    got: list[str] = []
    task = asyncio.create_task(_collect(local.tail(str(log), lines=5), got))
    try:
        await wait_for(lambda: len(got) >= 5)
        assert got == [f"old {i}" for i in range(295, 300)]
        with log.open("a") as f:
            f.write(" line\nnew \xe9\n")
        await wait_for(lambda: len(got) >= 7)
        assert got[5:] == ["partial line", "new é"]
        with log.open("ab") as f:
            f.write(b"bad \xff byte\n")
        await wait_for(lambda: len(got) >= 8)
        assert got[7] == "bad \ufffd byte"
        log.write_text("after truncate\n")  # truncated in place, shorter than before
        await wait_for(lambda: "after truncate" in got)
        log.unlink()
        await asyncio.sleep(0.3)
        log.write_text("recreated\n")
        await wait_for(lambda: "recreated" in got)
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_tail_waits_for_a_missing_file(local: LocalTransport, tmp_path: Path) -> None:
    log = tmp_path / "later.log"
    got: list[str] = []
    task = asyncio.create_task(_collect(local.tail(str(log)), got))
    try:
        await asyncio.sleep(0.3)
        log.write_text("hello\n")
        await wait_for(lambda: got == ["hello"])
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
