"""A log line without end (a child printing megabytes with no newline): every reader of the router log cuts it
at 16 KiB, says so, and carries on with the next line, locally and over ssh. Nothing holds the whole line."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from app.config import MachineConfig
from app.services.core.bounded import MAX_LOG_LINE
from app.services.hosts.local import LocalTransport
from app.services.hosts.transport import Transport
from app.services.lifecycle.manager import RouterManager
from app.services.ssh.transport import SshTransport
from tests.helpers.sshd import SshServer

HUGE = 20 * 1024 * 1024  # a 20 MB line


def write_hostile_log(path: Path) -> None:
    with open(path, "wb") as f:
        f.write(b"before\n")
        for _ in range(HUGE // 65536):
            f.write(b"x" * 65536)
        f.write(b"\nafter\n")


def check(lines: list[str]) -> None:
    assert lines[0] == "before", lines[:1]
    assert lines[1].startswith("x" * 100) and lines[1].endswith(f"…[cut: line longer than {MAX_LOG_LINE} bytes]")
    assert len(lines[1]) < MAX_LOG_LINE + 100
    assert lines[2] == "after", [ln[:40] for ln in lines]


async def first_lines(t: Transport, path: str, n: int) -> list[str]:
    got: list[str] = []
    gen: AsyncIterator[str] = t.tail(path, lines=50)
    async with asyncio.timeout(60):
        async for line in gen:
            got.append(line)
            if len(got) == n:
                break
    await gen.aclose()  # type: ignore[attr-defined]
    return got


async def test_local_tail_cuts_a_line_without_end(tmp_path: Path) -> None:
    log = tmp_path / "router.log"
    log.write_bytes(b"")
    t = LocalTransport()
    task = asyncio.create_task(first_lines(t, str(log), 3))
    await asyncio.sleep(0.3)  # following an empty file: the hostile line arrives while we follow
    await asyncio.to_thread(write_hostile_log, log)
    check(await task)


@pytest.mark.ssh
async def test_ssh_tail_cuts_a_line_without_end(sshd: SshServer, tmp_path: Path) -> None:
    log = tmp_path / "router.log"
    await asyncio.to_thread(write_hostile_log, log)
    t = SshTransport("box", sshd.host, port=sshd.port, user=sshd.user, identity_file=sshd.client_key,
                     known_hosts=sshd.known_hosts, ssh_config=os.devnull)  # fmt: skip
    try:
        check(await first_lines(t, str(log), 3))
        # the log's last lines (failure reports, `logs -n`) are cut on the far side: the answer stays small
        manager = RouterManager(MachineConfig(name="box", host=sshd.host), t)
        check(await manager.log_tail(3, str(log)))
    finally:
        await t.close()


async def test_local_log_tail_is_cut(tmp_path: Path) -> None:
    log = tmp_path / "router.log"
    await asyncio.to_thread(write_hostile_log, log)
    check(await RouterManager(MachineConfig(name="here"), LocalTransport()).log_tail(3, str(log)))
