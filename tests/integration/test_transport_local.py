"""LocalTransport against this machine: real processes, real files, no mocks."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import psutil
import pytest

from app.services.core.host_types import Connection, GpuStats
from app.services.hosts.local import LocalTransport
from tests.helpers.processes import stop
from tests.helpers.wait import wait_for


@pytest.fixture
async def local() -> AsyncIterator[LocalTransport]:
    t = LocalTransport()
    await t.connect()
    yield t
    await t.close()


async def test_state_and_identity(local: LocalTransport) -> None:
    assert local.is_local and local.state == Connection.LOCAL
    assert await local.forward_port(8123) == 8123


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
        await wait_for(lambda: "v=" in log.read_text(), what="log written")
        assert log.read_text() == f"earlier run\ncwd={tmp_path} v=$(touch x) 'q'\n"  # appended
        assert not (tmp_path / "x").exists()
        assert await t.pid_alive(pid)
        assert await t.kill(pid, signal.SIGTERM)

        async def gone() -> bool:
            return not await t.pid_alive(pid)

        await wait_for(gone, what="pid gone")
    finally:
        stop(pid)


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


async def test_tail_holds_a_partial_last_line_until_it_ends(local: LocalTransport, tmp_path: Path) -> None:
    # local only: over ssh the remote `tail` decides what a partial last line is
    log = tmp_path / "router.log"
    log.write_text("".join(f"old {i}\n" for i in range(300)) + "partial")
    got: list[str] = []
    task = asyncio.create_task(_collect(local.tail(str(log), lines=5), got))
    try:
        await wait_for(lambda: len(got) >= 5, what="first lines")
        assert got == [f"old {i}" for i in range(295, 300)]
        with log.open("a") as f:
            f.write(" line\nnew\n")
        await wait_for(lambda: len(got) >= 7, what="appended lines")
        assert got[5:] == ["partial line", "new"]
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
