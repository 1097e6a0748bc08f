"""The remote log tail under a flood, and the bounds of a long-lived ssh transport, against a real sshd."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from pathlib import Path
from typing import cast

import pytest

from app.services.hosts.local import LocalTransport
from app.services.ssh.port_forward import MAX_FORWARDS
from app.services.ssh.transport import SshTransport
from tests.helpers.sshd import SshServer, ssh_transport
from tests.helpers.wait import wait_for

pytestmark = pytest.mark.ssh


@pytest.fixture
async def ssh(sshd: SshServer) -> AsyncIterator[SshTransport]:
    t = ssh_transport(sshd)
    await t.connect()
    yield t
    await t.close()


async def _chunks(t: LocalTransport | SshTransport, path: str, out: list[list[str]]) -> None:
    async for chunk in t.tail_chunks(path, lines=0):
        out.append(chunk)


@pytest.mark.parametrize("where", ["local", "ssh"])
async def test_a_flood_arrives_whole_in_large_chunks_and_other_commands_still_run(
    where: str, ssh: SshTransport, tmp_path: Path
) -> None:
    t: LocalTransport | SshTransport = ssh if where == "ssh" else LocalTransport()
    log = tmp_path / "router.log"
    log.write_text("")
    got: list[list[str]] = []
    task = asyncio.create_task(_chunks(t, str(log), got))
    try:
        await asyncio.sleep(0.5)  # the tail is running
        n = 100_000
        with log.open("a") as f:
            for start in range(0, n, 10_000):
                f.write("".join(f"0.00.000.000 I srv  flood line {i:07d}\n" for i in range(start, start + 10_000)))
                f.flush()
                # Another command on the same link while the tail's channel is busy: it is not stuck behind it.
                res = await asyncio.wait_for(t.run(["echo", "still here"]), 20)
                assert res.stdout == b"still here\n"
        await wait_for(lambda: sum(map(len, got)) >= n, timeout=30, what="every line")
        lines = [ln for c in got for ln in c]
        assert lines[0].endswith("line 0000000") and lines[-1].endswith(f"line {n - 1:07d}")
        assert len(lines) == n  # a pipe skips nothing
        assert len(got) < n / 100, f"{len(got)} chunks for {n} lines: not read in large chunks"
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_tail_nobody_reads_holds_back_its_own_channel_only(ssh: SshTransport, tmp_path: Path) -> None:
    """The reader stops (a busy UI) while the log grows by many windows' worth: ssh flow control stops that channel
    alone (its own window, TAIL_WINDOW), so commands on the same connection still answer, and the tail then
    delivers every line once it is read again."""
    log = tmp_path / "router.log"
    log.write_text("")
    tail = cast("AsyncGenerator[list[str], None]", ssh.tail_chunks(str(log), lines=0))

    async def next_chunk() -> list[str]:
        return await anext(tail)

    first = asyncio.create_task(next_chunk())
    try:
        await asyncio.sleep(0.5)  # the tail is running
        n = 150_000  # ~8 MB: eight of its windows
        with log.open("a") as f:
            f.write("".join(f"0.00.000.000 I srv  flood line {i:07d} of an unread tail\n" for i in range(n)))
        got = await asyncio.wait_for(first, 20)  # then nothing reads it for a while
        for _ in range(3):
            res = await asyncio.wait_for(ssh.run(["echo", "still here"]), 20)
            assert res.stdout == b"still here\n"
            await asyncio.sleep(0.3)
        while len(got) < n:
            got += await asyncio.wait_for(next_chunk(), 20)
        assert got[-1].endswith(f"line {n - 1:07d} of an unread tail") and len(got) == n
    finally:
        first.cancel()
        await tail.aclose()


async def test_port_forwards_are_bounded_across_router_restarts(ssh: SshTransport) -> None:
    ports = [await ssh.forward_port(30000 + i) for i in range(3 * MAX_FORWARDS)]  # a restart picks a new port
    assert len(ssh._forwards._forwards) <= MAX_FORWARDS  # the bound beside MAX_FORWARDS
    assert ssh._forwards.local_port(30000 + 3 * MAX_FORWARDS - 1) == ports[-1]  # the newest is kept
    assert len(set(ports)) == len(ports)
