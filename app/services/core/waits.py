"""Waiting on something with a time bound, without losing a cancellation.

Python 3.11's `asyncio.wait_for` returns the inner result when the task is cancelled in the same turn as the thing
awaited completes, and the cancellation is lost (fixed in 3.12, python/cpython#86296). A follower looping on
`wait_for(queue.get(), ...)` while events arrive then never ends: quitting found a router follower "cancelling"
forever in its event stream. `asyncio.timeout` counts the cancellation and lets it through.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def within(aw: Awaitable[T], timeout: float | None) -> T:
    """`await aw`, raising TimeoutError after `timeout` seconds (None: no bound), cancellable at any point."""
    async with asyncio.timeout(timeout):
        return await aw
