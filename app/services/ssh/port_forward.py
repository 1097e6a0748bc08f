"""Local listeners for remote ports: each accepted socket is carried over a fresh ssh channel.

A listener lives as long as the transport, not the connection, so the local port (and every URL built on it)
stays the same across reconnects.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import asyncssh

from app.services.core.errors import TransportError

Reader = asyncio.StreamReader | asyncssh.SSHReader[bytes]
Writer = asyncio.StreamWriter | asyncssh.SSHWriter[bytes]
# Opens a channel to 127.0.0.1:port on the far side, connecting first if needed.
OpenChannel = Callable[[int], Awaitable[tuple[asyncssh.SSHReader[bytes], asyncssh.SSHWriter[bytes]]]]


# Bound: port forwards kept per machine (a router, maybe an attached one; old ports of restarted routers go).
MAX_FORWARDS = 4
# A channel opened ahead (warm) is taken by the next connection within this many seconds, else closed: the router
# gives an idle connection a few seconds before it drops it.
WARM_FOR = 3.0
# Channels kept open ahead per forward: a status asks /health and /models at once, two connections.
WARM_MAX = 2
Channel = tuple[asyncssh.SSHReader[bytes], asyncssh.SSHWriter[bytes]]


class _Forward:
    """One local listener for one remote port."""

    def __init__(self, remote_port: int) -> None:
        self.remote_port = remote_port
        self.server: asyncio.Server | None = None
        self.local_port = 0
        self.writers: set[Writer] = set()
        self.warm: list[asyncio.Future[Channel]] = []  # channels opened ahead for the next connections


class PortForwards:
    def __init__(self, open_channel: OpenChannel) -> None:
        self._open_channel = open_channel
        self._forwards: dict[int, _Forward] = {}
        self._lock = asyncio.Lock()

    def warm(self, local_port: int) -> None:
        """Open a channel now for the next connection to `local_port` (a request about to be sent once something
        else is done): it then costs one round trip, not two (channel open, then the request). Asked again, one
        more, up to WARM_MAX, for requests sent together."""
        fwd = next((f for f in self._forwards.values() if f.local_port == local_port), None)
        if fwd is None or len(fwd.warm) >= WARM_MAX:
            return
        warm = asyncio.ensure_future(self._open_channel(fwd.remote_port))
        warm.add_done_callback(lambda f: f.cancelled() or f.exception())
        fwd.warm.append(warm)
        asyncio.get_running_loop().call_later(WARM_FOR, self._cool, fwd, warm)

    @staticmethod
    def _cool(fwd: _Forward, warm: asyncio.Future[Channel]) -> None:
        if warm in fwd.warm:  # not taken in time
            fwd.warm.remove(warm)
            _drop(warm)

    async def _channel(self, fwd: _Forward) -> Channel:
        warm = fwd.warm.pop(0) if fwd.warm else None
        if warm is not None:
            try:
                return await warm
            except (TransportError, asyncssh.Error, OSError):
                pass  # a new one below
        return await self._open_channel(fwd.remote_port)

    def local_port(self, remote_port: int) -> int | None:
        """The local port already listening for remote_port, if any."""
        fwd = self._forwards.get(remote_port)
        return fwd.local_port if fwd is not None else None

    async def listen(self, remote_port: int) -> int:
        """The local port for remote_port, listening from now on."""
        async with self._lock:
            fwd = self._forwards.get(remote_port)
            if fwd is not None:
                return fwd.local_port
            fwd = _Forward(remote_port)

            async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                await self._serve(fwd, reader, writer)

            fwd.server = await asyncio.start_server(serve, "127.0.0.1", 0)
            fwd.local_port = int(fwd.server.sockets[0].getsockname()[1])
            self._forwards[remote_port] = fwd
            self._drop_idle()
            return fwd.local_port

    async def _serve(self, fwd: _Forward, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        fwd.writers.add(writer)
        try:
            try:
                r2, w2 = await self._channel(fwd)
            except (TransportError, asyncssh.Error, OSError):
                return  # closing the socket tells the client; it retries like any refused connection
            fwd.writers.add(w2)
            try:
                up = asyncio.ensure_future(_pump(reader, w2, half_close=True))
                await _pump(r2, writer, half_close=False)
                up.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await up
            finally:
                w2.close()
                fwd.writers.discard(w2)
        finally:
            fwd.writers.discard(writer)
            writer.close()

    def _drop_idle(self) -> None:
        """Each router start picks a new port: without this, a dashboard left open for days kept one listener per
        restart. Beyond MAX_FORWARDS, the oldest forwards with no open connection are closed."""
        for port, fwd in list(self._forwards.items()):
            if len(self._forwards) <= MAX_FORWARDS:
                return
            if not fwd.writers:
                if fwd.server is not None:
                    fwd.server.close()
                del self._forwards[port]

    def close(self) -> None:
        for fwd in self._forwards.values():
            for warm in fwd.warm:
                _drop(warm)
            fwd.warm.clear()
            if fwd.server is not None:
                fwd.server.close()
            for w in list(fwd.writers):
                w.close()
        self._forwards.clear()


def _drop(warm: asyncio.Future[Channel]) -> None:
    if not warm.done():
        warm.cancel()
    elif not warm.cancelled() and warm.exception() is None:
        warm.result()[1].close()


async def _pump(src: Reader, dst: Writer, *, half_close: bool) -> None:
    """Copy until EOF with backpressure (drain), then pass the EOF on (or close, for the server's side)."""
    try:
        while True:
            data = await src.read(65536)
            if not data:
                break
            dst.write(data)
            await dst.drain()
        if half_close and dst.can_write_eof():
            dst.write_eof()
    except (OSError, asyncssh.Error, ConnectionError):
        dst.close()
