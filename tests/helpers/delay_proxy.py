"""A loopback TCP proxy that adds a fixed delay to every byte in each direction: a slow link in front of a real
server (the fixture sshd), for benches and tests. A round trip through it costs 2 x `one_way` more.

Latency only, no bandwidth cap and no loss: each chunk read on one side is written to the other side `one_way`
seconds after it was read, in order (chunks read together keep their spacing, like packets in flight). The
proxy runs its own event loop in a thread, so it serves subprocesses and the caller's own loop alike.

    with DelayProxy("127.0.0.1", sshd.port, one_way=0.15) as p:   # a 300 ms round trip
        connect to 127.0.0.1:p.port
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from types import TracebackType

_CHUNK = 1 << 16


class DelayProxy:
    def __init__(self, target_host: str, target_port: int, *, one_way: float, host: str = "127.0.0.1") -> None:
        if one_way < 0:
            raise ValueError("a delay cannot be negative")
        self.target = (target_host, target_port)
        self.one_way = one_way  # may be changed while it runs; applies to chunks read from then on
        self.host = host
        self.port = 0
        self.connections = 0  # accepted so far
        self.bytes_up = 0  # client -> server
        self.bytes_down = 0  # server -> client
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._thread: threading.Thread | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._ready = threading.Event()
        self._error: BaseException | None = None

    # ---- life ----

    def start(self) -> DelayProxy:
        self._thread = threading.Thread(target=self._run, name="delay-proxy", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        if self._error is not None:
            raise RuntimeError(f"the delay proxy did not start: {self._error}")
        if not self.port:
            raise RuntimeError("the delay proxy did not start within 10 s")
        return self

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop already ended
            loop.call_soon_threadsafe(self._shutdown)
        thread.join(10)
        self._loop = self._thread = None

    def __enter__(self) -> DelayProxy:
        return self.start()

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def cut(self) -> None:
        """Close every connection through the proxy now (both sides see the close at once, no delay)."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._close_all)

    # ---- inside the proxy's thread ----

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            self._server = loop.run_until_complete(asyncio.start_server(self._serve, self.host, 0))
            self.port = self._server.sockets[0].getsockname()[1]
        except OSError as e:
            self._error = e
            self._ready.set()
            loop.close()
            return
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        self._close_all()
        assert self._loop is not None
        tasks = [t for t in asyncio.all_tasks(self._loop) if t is not asyncio.current_task(self._loop)]
        for t in tasks:
            t.cancel()
        self._loop.call_later(0.05, self._loop.stop)

    def _close_all(self) -> None:
        for w in list(self._writers):
            w.close()

    async def _serve(self, c_reader: asyncio.StreamReader, c_writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            s_reader, s_writer = await asyncio.open_connection(*self.target)
        except OSError:
            c_writer.close()
            return
        self._writers.update((c_writer, s_writer))
        try:
            with contextlib.suppress(asyncio.CancelledError):  # the proxy stopping
                await asyncio.gather(
                    self._pump(c_reader, s_writer, up=True),
                    self._pump(s_reader, c_writer, up=False),
                )
        finally:
            for w in (c_writer, s_writer):
                self._writers.discard(w)
                w.close()

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, up: bool) -> None:
        """Read as fast as it comes; deliver each chunk `one_way` after it was read, in order."""
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def deliver() -> None:
            while True:
                due, data = await queue.get()
                wait = due - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                if not data:
                    with contextlib.suppress(OSError, RuntimeError):
                        writer.write_eof()
                    return
                writer.write(data)
                await writer.drain()

        sender = asyncio.get_running_loop().create_task(deliver())
        try:
            while True:
                try:
                    data = await reader.read(_CHUNK)
                except OSError:
                    data = b""
                if up:
                    self.bytes_up += len(data)
                else:
                    self.bytes_down += len(data)
                queue.put_nowait((time.monotonic() + self.one_way, data))
                if not data:
                    break
            await sender
        except (OSError, ConnectionError):
            pass
        finally:
            if not sender.done():
                sender.cancel()
                with contextlib.suppress(asyncio.CancelledError, OSError, ConnectionError):
                    await sender
