"""One read of a host's figures for every machine entry that names that host, at the same moment.

Several entries may reach one host: a router per GPU, or per user, on the same box. Each entry's stats round wakes
at the same moment (machine/stats_rounds.py), and each used to read the same /proc files through its own link: 20
entries on one sshd made 20 identical requests every round. The first caller for a host in a moment reads; the
others take its answer. Each caller still computes its own figures from it (the CPU share against its own previous
sample), so who read does not matter.

An entry that asks again takes a read of its own: what is shared is one moment's read among entries, never an old
answer to the entry that already had it.

A caller that took another's read and got nothing from it in time (that entry's link is slow or broken, its read
failed) reads for itself: an entry never waits on, or fails because of, a link that is not its own.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

from app.services.core.errors import HerdError
from app.services.core.waits import within

T = TypeVar("T")


@dataclass
class _Read(Generic[T]):
    loop: asyncio.AbstractEventLoop
    at: float
    task: asyncio.Task[T]
    takers: set[Hashable]


class SharedReads(Generic[T]):
    """Reads by key: a read started less than `fresh` seconds ago answers a caller for the same key; a caller
    waits at most `wait` seconds for another's read before reading for itself."""

    def __init__(self, fresh: float, wait: float) -> None:
        self.fresh = fresh
        self.wait = wait
        self.reads = 0  # reads started (tests and benches read it)
        self._held: dict[Hashable, _Read[T]] = {}

    async def take(self, key: Hashable, who: Hashable, read: Callable[[], Awaitable[T]]) -> T:
        """`who` (the entry asking) takes the read of `key` made this moment by another entry, or reads."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        held = self._held.get(key)
        if held is not None and held.loop is loop and 0 <= now - held.at <= self.fresh and who not in held.takers:
            held.takers.add(who)
            with contextlib.suppress(HerdError, TimeoutError):
                return await within(asyncio.shield(held.task), self.wait)
            return await read()  # that read failed or is slow: this entry's own link decides
        task: asyncio.Task[T] = loop.create_task(_call(read))
        task.add_done_callback(_retrieved)  # a read whose caller was cancelled: nobody else may ask for it
        self._held[key] = _Read(loop, now, task, {who})
        self.reads += 1
        return await asyncio.shield(task)  # a cancelled caller leaves the read to the others


async def _call(read: Callable[[], Awaitable[T]]) -> T:
    return await read()


def _retrieved(task: asyncio.Task[object]) -> None:
    if not task.cancelled():
        task.exception()
