"""Closing a machine is bounded: quitting the dashboard never waits on a follower that will not end."""

from __future__ import annotations

import asyncio

import pytest

from app.config import MachineConfig
from app.services.machine import machine as machine_mod
from app.services.machine.machine import Machine


async def test_close_does_not_wait_for_ever_on_a_follower_that_will_not_end(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(machine_mod, "CLOSE_WAIT", 0.2)
    m = Machine(MachineConfig(name="here"), emit=lambda ev: None)
    released = asyncio.Event()
    cancels = 0

    async def will_not_end() -> None:
        # As a connection closed inside httpcore's cancellation shield behaves while another task still reads it.
        nonlocal cancels
        while not released.is_set():
            try:
                await released.wait()
            except asyncio.CancelledError:
                cancels += 1

    stuck = asyncio.create_task(will_not_end())
    ends = asyncio.create_task(asyncio.sleep(3600))
    m._tasks = [stuck, ends]
    await asyncio.wait_for(m.close(), 10)
    assert cancels == 1, "close did not cancel the follower"
    assert ends.cancelled(), "a follower that can end was not awaited to its end"
    assert not stuck.done(), "the stuck follower was not stuck: the test proves nothing"
    released.set()
    await stuck
