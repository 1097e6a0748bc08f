"""A cancellation that meets the thing awaited completing is not lost (3.11's asyncio.wait_for lost it: a router
follower stayed "cancelling" for good at quit, looping on its event queue)."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from app.config import MachineConfig
from app.services.core.waits import within
from app.services.machine.machine import Machine


async def loop_on(q: asyncio.Queue[int]) -> None:
    while True:
        with contextlib.suppress(TimeoutError):
            await within(q.get(), 5)


async def test_a_cancel_in_the_turn_an_item_arrives_ends_the_loop() -> None:
    q: asyncio.Queue[int] = asyncio.Queue()
    t = asyncio.create_task(loop_on(q))
    await asyncio.sleep(0)
    q.put_nowait(1)  # the get completes, and the task is cancelled, in the same turn
    t.cancel()
    done, _ = await asyncio.wait({t}, timeout=5)
    assert done and t.cancelled()


async def test_the_bound_still_holds() -> None:
    with pytest.raises(TimeoutError):
        await within(asyncio.Event().wait(), 0.01)
    assert await within(asyncio.sleep(0, "x"), None) == "x"


async def test_a_follower_poked_as_it_is_cancelled_ends() -> None:
    m = Machine(MachineConfig(name="here"), emit=lambda ev: None)
    t = asyncio.create_task(m._wait_poke(30))
    await asyncio.sleep(0)
    m.poke()
    t.cancel()
    done, _ = await asyncio.wait({t}, timeout=5)
    assert done and t.cancelled()


def test_no_module_of_the_app_uses_asyncio_wait_for() -> None:
    """Every time bound in app/ goes through `within` (3.11's wait_for can lose a cancel, waits.py)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "app"
    users = [
        p.name for p in root.rglob("*.py") if "asyncio.wait_for(" in p.read_text() or "import wait_for" in p.read_text()
    ]
    assert not users, f"asyncio.wait_for used in {users}; use app.services.waits.within"
    assert sum(1 for _ in root.rglob("*.py")) > 50  # the walk saw the package
