"""An idle dashboard on local machines stays cheap (issue 11.4): the log tail polls promptly after data and backs
off while the log is quiet (5 managed routers' tails were 50 thread hops a second), and the local machines of one
stats round share one read of the host. Waits and rounds are stepped, no sleeping."""

from __future__ import annotations

import shutil
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import cast

import pytest

from app.services.hosts import local as local_transport
from app.services.hosts.local import TAIL_FIRST, TAIL_IDLE_CAP, LocalTransport


async def test_a_quiet_log_is_polled_ever_more_slowly_and_promptly_again_after_a_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "router.log"
    log.write_text("old line\n")
    waits: list[float] = []
    # What the "operator's router" writes after the n-th wait.
    writes = {6: "first\n", 7: "second\n", 13: "third\n"}

    async def stepped(seconds: float) -> None:
        waits.append(seconds)
        more = writes.get(len(waits))
        if more:
            with log.open("a") as f:
                f.write(more)

    monkeypatch.setattr(local_transport, "_sleep", stepped)
    got: list[str] = []
    tail = cast("AsyncGenerator[list[str], None]", LocalTransport().tail_chunks(str(log), lines=5))
    async for chunk in tail:
        got += chunk
        if "third" in got:
            break
    await tail.aclose()
    assert got == ["old line", "first", "second", "third"]
    cap = TAIL_IDLE_CAP
    # Quiet: 0.1, 0.2, 0.4, 0.8 (the cap), 0.8, 0.8; a line arrives -> the next wait is 0.1 again.
    assert waits[:6] == [TAIL_FIRST, 0.2, 0.4, cap, cap, cap]
    assert waits[6] == TAIL_FIRST
    assert waits[7:13] == [TAIL_FIRST, 0.2, 0.4, cap, cap, cap]
    assert max(waits) == cap  # the most a first line after a quiet spell waits


async def test_local_machines_of_one_stats_round_share_one_read_of_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[int] = []
    real = local_transport._read_host

    def counted() -> object:
        reads.append(1)
        return real()

    now = [1000.0]
    monkeypatch.setattr(local_transport, "_read_host", counted)
    monkeypatch.setattr(local_transport, "_clock", lambda: now[0])
    monkeypatch.setattr(local_transport, "_host_read", None)
    monkeypatch.setattr(local_transport, "_which_at", None)
    looked: list[str] = []
    monkeypatch.setattr(shutil, "which", lambda name: looked.append(name))
    machines = [LocalTransport(f"m{i}") for i in range(5)]
    first = [await m.host_stats() for m in machines]
    assert len(reads) == 1
    assert len({(s.mem_total, s.load_avg) for s in first}) == 1
    now[0] += 2.0  # the next round: read again, once
    second = [await m.host_stats() for m in machines]
    assert len(reads) == 2
    assert all(0.0 <= s.cpu_pct <= 100.0 and s.mem_total > 0 for s in second)
    assert looked == ["nvidia-smi"]  # PATH is searched once a minute, not by every machine every round
    now[0] += local_transport.WHICH_TTL + 1
    await machines[0].host_stats()
    assert looked == ["nvidia-smi", "nvidia-smi"]
