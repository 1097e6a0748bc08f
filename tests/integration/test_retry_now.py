"""Retry now: a machine whose router went away is looked at again at once when the operator asks, not when its
reconnect backoff (0.5 s doubling to 15 s) next comes round."""

from __future__ import annotations

import asyncio
import time

import pytest

from app.config import Config, MachineConfig
from app.services.core.router_types import RouterState
from app.services.fleet import Fleet
from tests.helpers.router import RouterProc
from tests.helpers.wait import wait_for

GROWN = 8.0
"""By now the follower has failed at 0, 0.5, 1.5, 3.5 and 7.5 s: its next look is due at 15.5 s."""


@pytest.mark.timing
async def test_retry_now_skips_the_backoff(router: RouterProc) -> None:
    fleet = Fleet(Config(machines=(MachineConfig(name="box", url=router.url),)))
    await fleet.start()
    try:
        await wait_for(lambda: fleet.view("box").router_state is RouterState.ATTACHED, timeout=15)
        router.stop()
        await wait_for(lambda: fleet.view("box").router_state is RouterState.UNREACHABLE, timeout=5)
        await asyncio.sleep(GROWN)  # the backoff grows: nothing to wait for but time itself
        router.start()
        t0 = time.monotonic()
        fleet.retry_now("box")
        await wait_for(lambda: fleet.view("box").router_state is RouterState.ATTACHED, timeout=5, what="attached")
        took = time.monotonic() - t0
        assert took < 3.0, f"retry now took {took:.1f} s: the backoff was waited out"
    finally:
        await fleet.close()
