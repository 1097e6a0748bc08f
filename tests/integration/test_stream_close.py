"""Closing the event stream ends its reader and its connection at once, in the caller's task (not later, by the
garbage collector in a task of its own: one such reader was found still reading at quit)."""

from __future__ import annotations

import asyncio

from app.services.core.router_types import ModelListEvent
from app.services.router.client import RouterClient
from app.services.router.event_stream import router_events
from tests.helpers.router import RouterProc


def readers() -> list[asyncio.Task[object]]:
    return [t for t in asyncio.all_tasks() if "_read_sse" in repr(t.get_coro())]


async def test_closing_the_events_ends_the_stream_reader(router: RouterProc) -> None:
    async with RouterClient(router.url) as c:
        events = router_events(c)
        async with asyncio.timeout(30):
            async for ev in events:
                if isinstance(ev, ModelListEvent):
                    break
        assert len(readers()) == 1  # the session is open, suspended at its yield
        await events.aclose()
        assert readers() == []  # ended before aclose returned, with no task left behind
