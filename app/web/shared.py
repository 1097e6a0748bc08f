"""Browser sessions sharing the serve process's Fleet: each websocket is a dashboard (HerdApp) of its own, run on
this event loop with a SessionDriver (session_driver.py), over the one Fleet the metrics read, so a tab opens no
ssh connection and no router stream of its own. At most `max_sessions` at once.

What the sessions share and how: the Fleet is started and closed by `serve`, never by a session (manage_fleet is
off); a session's wish to poll only what it shows is ignored (the metrics want every machine's activity:
ServedFleet); one HistoryRecorder writes the history for all, and each session reads it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import Collection
from typing import Any

from aiohttp import WSMsgType, web

from app.config import Config
from app.services.core.waits import within
from app.services.fleet import Fleet
from app.services.history.store import HistoryStore
from app.ui.app import HerdApp, make_app
from app.web.browser_socket import open_websocket, refused_when_full, screen_size
from app.web.session_driver import SessionDriver, session_driver_class

log = logging.getLogger("llamaherd.serve")

# Bound: output a tab has not taken yet; a tab this far behind (a browser that stopped reading) is closed.
MAX_BACKLOG = 16 << 20
MAX_EARLY = 64  # bound: messages kept from a page before its dashboard can take them
QUIT_GRACE = 5.0  # seconds a session's dashboard has to leave after its tab went


class ServedFleet(Fleet):
    def watch_activity(self, machines: Collection[str] | None) -> None:
        """Every machine's activity is polled: the metrics export it, whatever a tab shows."""


def apply(driver: SessionDriver, kind: object, data: object) -> None:
    """One message from the page, to the dashboard."""
    if kind == "stdin" and isinstance(data, str):
        driver.feed(data)
    elif kind == "resize" and isinstance(data, dict):
        driver.resize(*screen_size(data.get("width"), data.get("height")))
    elif kind in ("focus", "blur"):
        driver.focus(kind == "focus")


class Session:
    """One tab: its websocket, its dashboard, and the output on its way to the browser."""

    def __init__(self, websocket: web.WebSocketResponse) -> None:
        self.websocket = websocket
        self.driver: SessionDriver | None = None
        self.early: list[tuple[object, object]] = []
        """What the page said before the dashboard had its driver."""
        self._out: list[bytes] = []
        self._size = 0
        self._ready = asyncio.Event()
        self._ended = False

    def sink(self, data: bytes) -> None:
        if self._ended:
            return
        self._out.append(data)
        self._size += len(data)
        if self._size > MAX_BACKLOG:
            self._ended = True
            self._out.clear()
            asyncio.get_running_loop().create_task(self.websocket.close(message=b"too far behind"))
        self._ready.set()

    def closed(self) -> None:
        self._ended = True
        self._ready.set()

    async def send_out(self) -> None:
        """Send what the dashboard wrote, in order, as one frame per batch."""
        while True:
            await self._ready.wait()
            self._ready.clear()
            if self._out:
                batch, self._out, self._size = b"".join(self._out), [], 0
                await self.websocket.send_bytes(batch)
            if self._ended:
                return


class SharedSessions:
    def __init__(self, config: Config, fleet: Fleet, history: HistoryStore | None, max_sessions: int) -> None:
        self.config = config
        self.fleet = fleet
        self.history = history
        self.max_sessions = max_sessions
        self.live: set[HerdApp] = set()
        self._running: set[asyncio.Task[object]] = set()
        self._streams = (sys.stdout, sys.stderr)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        refused = refused_when_full(len(self.live), self.max_sessions)
        if refused is not None:
            return refused
        websocket, width, height = await open_websocket(request)
        session = Session(websocket)
        app = make_app(self.config, self.fleet, history=self.history)
        app.manage_fleet = False  # the serve process starts and closes the Fleet, not a tab
        driver_class = session_driver_class(session.sink, session.closed)

        def keep_driver(driver: SessionDriver) -> None:
            session.driver = driver
            early, session.early = session.early, []

            def replay() -> None:
                for kind, data in early:
                    apply(driver, kind, data)

            driver.started = replay

        driver_class.created = staticmethod(keep_driver)
        app.driver_class = driver_class
        self.live.add(app)
        sender = asyncio.create_task(session.send_out())
        running: asyncio.Task[object] = asyncio.create_task(app.run_async(size=(width, height)))
        self._running.add(running)
        running.add_done_callback(self._running.discard)
        try:
            reading = asyncio.create_task(self._messages(websocket, session))
            await asyncio.wait({running, reading}, return_when=asyncio.FIRST_COMPLETED)
            reading.cancel()
            if not running.done():
                app.exit()
                try:
                    async with asyncio.timeout(QUIT_GRACE):
                        await asyncio.shield(running)
                except TimeoutError:
                    running.cancel()
        except Exception as e:  # one session's failure is said once and ends that session only
            log.warning("a browser session ended: %s: %s", type(e).__name__, e)
        finally:
            self.live.discard(app)
            session.closed()
            with contextlib.suppress(Exception):
                await within(sender, QUIT_GRACE)
            await websocket.close()
            self._let_go(app)
        return websocket

    async def _messages(self, websocket: web.WebSocketResponse, session: Session) -> None:
        async for message in websocket:
            if message.type != WSMsgType.TEXT:
                continue
            try:
                envelope: Any = message.json()
            except ValueError:
                continue
            if not isinstance(envelope, list) or not envelope:
                continue
            kind, data = envelope[0], envelope[1] if len(envelope) > 1 else None
            if kind == "ping":
                await websocket.send_json(["pong", data])
            elif session.driver is None:
                # The page sends its fitted size and its focus at once, before the dashboard has a driver: kept
                # and applied when it has one (a lost resize left the screen a row off; a lost focus, dimmed).
                if len(session.early) < MAX_EARLY:
                    session.early.append((kind, data))
            else:
                apply(session.driver, kind, data)

    def _let_go(self, app: HerdApp) -> None:
        """What a finished dashboard leaves behind in this process: its history listener, and (once no dashboard
        runs) the stdout/stderr Textual swapped for its own while it ran (apps that end out of order restore each
        other's)."""
        if self.history is not None:
            self.history.listeners[:] = [f for f in self.history.listeners if getattr(f, "__self__", None) is not app]
        if not self.live:
            sys.stdout, sys.stderr = self._streams

    def pids(self) -> list[int]:
        return []

    async def close_all(self) -> None:
        """Every dashboard told to quit, and waited for (QUIT_GRACE at most) before the Fleet they read closes."""
        for app in list(self.live):
            app.exit()
        if self._running:
            _, late = await asyncio.wait(set(self._running), timeout=QUIT_GRACE)
            for task in late:
                task.cancel()
