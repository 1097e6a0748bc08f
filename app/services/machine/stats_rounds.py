"""When host stats are read: every machine's round at the same moments, one schedule for all."""

from __future__ import annotations

import asyncio
import math


async def next_round(every: float) -> None:
    """Sleep until the next multiple of `every` on the loop's clock. Every machine's stats round wakes at the same
    moment (one schedule for all, not one per machine), so their figures arrive together and are painted in one
    repaint rather than one per machine, spread over the interval."""
    now = asyncio.get_running_loop().time()
    await asyncio.sleep(round_after(now, every) - now)


def round_after(now: float, every: float) -> float:
    """The first multiple of `every` after `now`: the same for every machine whenever its last round ended."""
    return (math.floor(now / every) + 1) * every


def round_number(every: float) -> int:
    """Which round of the one schedule it is now: the same number for every machine in the same round."""
    return round(asyncio.get_running_loop().time() / every)
