"""Browser sessions, `serve --sessions process`: each websocket runs `llamaherd dashboard` in a process of its own
(textual-serve's AppService, speaking Textual's web driver over the child's stdin and stdout), at most
`max_sessions` at once.

The default is shared.py (every tab a dashboard inside serve, over its one Fleet). This mode isolates the tabs (a
crash takes one tab only) at a price, measured by bench/serve_sessions.py: each tab is a process of ~53 MiB PSS
(71 MiB RSS) and 1.5–2 % of a core while open, with its own Fleet, so its own ssh connection to each remote machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal

from aiohttp import WSMsgType, web
from textual_serve.app_service import AppService
from textual_serve.download_manager import DownloadManager

from app.web.browser_socket import open_websocket, refused_when_full, screen_size

log = logging.getLogger("llamaherd.serve")

# Bound: how long a session's process has to leave after it is told to quit, before it is killed by pid.
QUIT_GRACE = 5.0


async def _close(websocket: web.WebSocketResponse) -> None:
    await websocket.close()


class Sessions:
    def __init__(self, command: str, max_sessions: int) -> None:
        self.command = command
        self.max_sessions = max_sessions
        self.live: set[AppService] = set()
        self.downloads = DownloadManager()

    def pids(self) -> list[int]:
        """The session processes running now (their pids), for the tests and the bench."""
        return [s._process.pid for s in self.live if s._process is not None]

    async def handle(self, request: web.Request) -> web.StreamResponse:
        refused = refused_when_full(len(self.live), self.max_sessions)
        if refused is not None:
            return refused
        websocket, width, height = await open_websocket(request)
        service = AppService(
            self.command,
            write_bytes=websocket.send_bytes,
            write_str=websocket.send_str,
            close=lambda: _close(websocket),
            download_manager=self.downloads,
        )
        self.live.add(service)
        try:
            await service.start(width, height)
            await self._messages(websocket, service)
        except asyncio.CancelledError:
            await websocket.close()
        except Exception as e:  # one session's failure is said once and ends that session only
            log.warning("a browser session ended: %s: %s", type(e).__name__, e)
        finally:
            await self._end(service)
        return websocket

    async def _messages(self, websocket: web.WebSocketResponse, service: AppService) -> None:
        async for message in websocket:
            if message.type != WSMsgType.TEXT:
                continue
            try:
                envelope = message.json()
            except ValueError:
                continue
            if not isinstance(envelope, list) or len(envelope) < 2:
                continue
            kind, data = envelope[0], envelope[1]
            if kind == "stdin" and isinstance(data, str):
                await service.send_bytes(data.encode("utf-8"))
            elif kind == "resize" and isinstance(data, dict):
                w, h = screen_size(data.get("width"), data.get("height"))
                await service.set_terminal_size(w, h)
            elif kind == "ping":
                await websocket.send_json(["pong", data])
            elif kind == "blur":
                await service.blur()
            elif kind == "focus":
                await service.focus()

    async def _end(self, service: AppService) -> None:
        """Tell the session's dashboard to quit; one that has not left in QUIT_GRACE seconds is killed by pid."""
        self.live.discard(service)
        proc = service._process
        with contextlib.suppress(Exception):
            async with asyncio.timeout(QUIT_GRACE):
                await service.stop()
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGKILL)
            with contextlib.suppress(Exception):
                await proc.wait()

    async def close_all(self) -> None:
        await asyncio.gather(*(self._end(s) for s in list(self.live)), return_exceptions=True)
