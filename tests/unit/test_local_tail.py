"""The local log tail polls promptly after data and backs off while the log is quiet (issue 11.4: an idle
dashboard's 5 tails were 50 thread hops a second). Its waits are stepped through a recorder, no sleeping."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from pathlib import Path
from typing import cast

import pytest

from app.services import local_transport
from app.services.local_transport import TAIL_FIRST, TAIL_IDLE_CAP, LocalTransport


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
