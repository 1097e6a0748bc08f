"""Where a router has no /models/sse (an older llama-server), the stream polls /models every 2 s and says so.

The router is the real one; in front of it sits a small loopback proxy that answers 404 for /models/sse, as an
older build would, and passes every other request through unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from app.config import MachineConfig
from app.services.core.router_types import ModelListEvent, ModelState, StreamState, StreamStateEvent
from app.services.machine.machine import Machine
from app.services.router.client import RouterClient
from app.services.router.event_stream import router_events
from tests.helpers.router import RouterProc
from tests.helpers.wait import wait_for


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    writer.close()


@contextlib.asynccontextmanager
async def without_sse(router: RouterProc) -> AsyncIterator[str]:
    async def handle(cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        head = await cr.readuntil(b"\r\n\r\n")
        if head.split(b" ", 2)[1].startswith(b"/models/sse"):
            cw.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 14\r\nConnection: close\r\n\r\nFile Not Found")
            await cw.drain()
            cw.close()
            return
        length = next(
            (int(h.split(b":")[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")), 0
        )
        body = await cr.readexactly(length) if length else b""
        rr, rw = await asyncio.open_connection("127.0.0.1", router.port)
        rw.write(head + body)
        await rw.drain()
        await _pipe(rr, cw)
        rw.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.close()
        await server.wait_closed()


async def test_stream_falls_back_to_polling(router: RouterProc) -> None:
    async with without_sse(router) as url, RouterClient(url) as c:
        events = router_events(c, poll_interval=0.5)
        first = await anext(events)
        assert (
            isinstance(first, StreamStateEvent) and first.state == StreamState.POLLING and "/models/sse" in first.reason
        )
        listed = await anext(events)
        assert isinstance(listed, ModelListEvent) and {m.id for m in listed.models} == {"alpha", "beta", "broken"}
        await c.load("alpha")
        async with asyncio.timeout(15):
            async for ev in events:
                if isinstance(ev, ModelListEvent) and any(
                    m.id == "alpha" and m.state is ModelState.LOADED for m in ev.models
                ):
                    break
        await events.aclose()


async def test_machine_says_it_is_polling(router: RouterProc) -> None:
    async with without_sse(router) as url:
        m = Machine(MachineConfig(name="old", url=url), lambda ev: None)
        m.start()
        try:
            await wait_for(lambda: m.view.stream == "polling", 10)
            assert "polling" in m.view.router_reason and set(m.models) == {"alpha", "beta", "broken"}
        finally:
            await m.close()
