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
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from textual.pilot import Pilot


def _failure(what: str, timeout: float, explain: Callable[[], str] | None) -> AssertionError:
    detail = f"\n{explain()}" if explain is not None else ""
    return AssertionError(f"{what} not met within {timeout} s{detail}")


async def wait_for(
    cond: Callable[[], object],
    timeout: float = 10.0,
    *,
    what: str = "condition",
    step: float | None = None,
    pilot: Pilot[Any] | None = None,
    explain: Callable[[], str] | None = None,
) -> float:
    """Await until cond() is true (cond may also be a coroutine function); returns the seconds it took, and fails
    with `what` (and what `explain` tells) when it is not true within `timeout` seconds.

    With a Textual test `pilot`, the app runs and repaints between looks (its pause() instead of asyncio.sleep),
    the looks are 0.02 s apart unless `step` says otherwise (0.05 s without a pilot), and the failure message
    shows the screen as text unless `explain` is given."""
    if pilot is not None:
        from tests.helpers.screen import screen_text

        app = pilot.app
        sleep: Callable[[float], Awaitable[object]] = pilot.pause
        explain = explain or (lambda: screen_text(app))
        step = 0.02 if step is None else step
    else:
        sleep = asyncio.sleep
        step = 0.05 if step is None else step
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
