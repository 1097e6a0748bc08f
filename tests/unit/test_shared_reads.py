"""hosts/shared_reads.py: one read per host per moment for the entries naming that host; an entry never waits on,
or fails because of, another entry's read."""

from __future__ import annotations

import asyncio

import pytest

from app.services.core.errors import TransportError
from app.services.hosts.shared_reads import SharedReads


class Reader:
    def __init__(self, name: str, delay: float = 0.0, fail: bool = False) -> None:
        self.name, self.delay, self.fail = name, delay, fail
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        await asyncio.sleep(self.delay)
        if self.fail:
            raise TransportError(f"{self.name}: link down")
        return f"{self.name}#{self.calls}"


async def test_entries_of_one_host_in_one_moment_share_one_read() -> None:
    reads: SharedReads[str] = SharedReads(fresh=1.0, wait=1.0)
    readers = [Reader(f"e{i}", delay=0.05) for i in range(20)]
    got = await asyncio.gather(*(reads.take("box", r, r) for r in readers))
    assert got == ["e0#1"] * 20
    assert sum(r.calls for r in readers) == 1 and reads.reads == 1
    other = Reader("x")
    assert await reads.take("other-box", other, other) == "x#1"  # another host reads for itself
    assert reads.reads == 2


async def test_a_read_is_fresh_for_a_moment_only() -> None:
    reads: SharedReads[str] = SharedReads(fresh=0.05, wait=1.0)
    a, b = Reader("a"), Reader("b")
    assert await reads.take("box", a, a) == "a#1"
    assert await reads.take("box", b, b) == "a#1"  # the same moment
    await asyncio.sleep(0.08)
    assert await reads.take("box", b, b) == "b#1"  # the next round reads again
    assert (a.calls, b.calls) == (1, 1)


async def test_a_failed_read_fails_only_its_own_entry() -> None:
    reads: SharedReads[str] = SharedReads(fresh=1.0, wait=1.0)
    broken, fine = Reader("broken", delay=0.02, fail=True), Reader("fine")
    first = asyncio.create_task(reads.take("box", broken, broken))
    await asyncio.sleep(0)
    assert await reads.take("box", fine, fine) == "fine#1"  # its own link answers
    with pytest.raises(TransportError, match="broken: link down"):
        await first


async def test_a_slow_read_is_waited_on_for_a_bounded_time() -> None:
    reads: SharedReads[str] = SharedReads(fresh=5.0, wait=0.05)
    wedged, fine = Reader("wedged", delay=10.0), Reader("fine")
    first = asyncio.create_task(reads.take("box", wedged, wedged))
    await asyncio.sleep(0)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    assert await reads.take("box", fine, fine) == "fine#1"
    assert loop.time() - t0 < 1.0
    first.cancel()


async def test_a_cancelled_reader_leaves_its_read_to_the_others() -> None:
    reads: SharedReads[str] = SharedReads(fresh=1.0, wait=1.0)
    a, b = Reader("a", delay=0.05), Reader("b")
    first = asyncio.create_task(reads.take("box", a, a))
    await asyncio.sleep(0)
    second = asyncio.create_task(reads.take("box", b, b))
    await asyncio.sleep(0.01)
    first.cancel()
    assert await second == "a#1"
    assert b.calls == 0
    with pytest.raises(asyncio.CancelledError):
        await first


async def test_an_entry_that_asks_again_reads_again() -> None:
    reads: SharedReads[str] = SharedReads(fresh=5.0, wait=1.0)
    a, b = Reader("a"), Reader("b")
    assert await reads.take("box", a, a) == "a#1"
    assert await reads.take("box", a, a) == "a#2"  # its second ask is a moment of its own (a GPU appeared since)
    assert await reads.take("box", b, b) == "a#2"  # and the others share that one
    assert await reads.take("box", b, b) == "b#1"
