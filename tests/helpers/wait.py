"""Waiting for a condition: the one way tests wait, instead of a fixed sleep.

A test waits for the event it expects, with a deadline; a negative check ("X did not happen") first waits for
the event that would have let X happen, so it neither sleeps longer than needed nor passes on a slow machine
because it looked too early.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable


def _failure(what: str, timeout: float, explain: Callable[[], str] | None) -> AssertionError:
    detail = f"\n{explain()}" if explain is not None else ""
    return AssertionError(f"{what} not met within {timeout} s{detail}")


async def wait_for(
    cond: Callable[[], object],
    timeout: float = 10.0,
    *,
    what: str = "condition",
    step: float = 0.05,
    pause: Callable[[float], Awaitable[object]] | None = None,
    explain: Callable[[], str] | None = None,
) -> float:
    """Await until cond() is true (cond may also be a coroutine function); returns the seconds it took.
    `pause` replaces asyncio.sleep between looks (a Textual pilot's pause, so the screen refreshes);
    `explain` adds what the failure message shows."""
    sleep = pause or asyncio.sleep
    t0 = time.monotonic()
    while True:
        ok = cond()
        if inspect.isawaitable(ok):
            ok = await ok
        if ok:
            return time.monotonic() - t0
        if time.monotonic() - t0 > timeout:
            raise _failure(what, timeout, explain)
        await sleep(step)


def wait_for_sync(
    cond: Callable[[], object],
    timeout: float = 10.0,
    *,
    what: str = "condition",
    step: float = 0.05,
    explain: Callable[[], str] | None = None,
) -> float:
    """wait_for for code outside an event loop (subprocesses, tmux, sshd start-up): blocks between looks."""
    t0 = time.monotonic()
    while not cond():
        if time.monotonic() - t0 > timeout:
            raise _failure(what, timeout, explain)
        time.sleep(step)
    return time.monotonic() - t0


def eventually(cond: Callable[[], object], timeout: float, step: float = 0.05) -> bool:
    """Whether cond() became true within timeout, without failing: for helpers that report rather than assert."""
    try:
        wait_for_sync(cond, timeout, step=step)
    except AssertionError:
        return False
    return True
