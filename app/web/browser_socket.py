"""What both ways of serving a browser tab share (a session process each, or a dashboard each in one process): the
bounds on what a page sends, the size it asks for, and the refusal once --max-sessions tabs are open."""

from __future__ import annotations

from aiohttp import web

MAX_WS_MESSAGE = 1 << 20
"""Bound: one message from a browser (a key, a paste, a resize); a larger one closes that tab's websocket."""


def bounded_int(value: object, default: int, low: int, high: int) -> int:
    """A number the page sent, held within [low, high]; `default` when it is not one."""
    try:
        return max(low, min(high, int(str(value))))
    except ValueError:
        return default


def screen_size(width: object, height: object) -> tuple[int, int]:
    """The terminal size a page asks for, within what a dashboard can be drawn at."""
    return bounded_int(width, 80, 20, 1000), bounded_int(height, 24, 10, 500)


def refused_when_full(open_sessions: int, max_sessions: int) -> web.Response | None:
    if open_sessions < max_sessions:
        return None
    return web.Response(
        status=503,
        text=f"llamaherd serve: {open_sessions} browser sessions are open, the most it allows "
        "(--max-sessions); close one and reload\n",
    )


async def open_websocket(request: web.Request) -> tuple[web.WebSocketResponse, int, int]:
    """The tab's websocket, prepared, and the terminal size its page asked for."""
    websocket = web.WebSocketResponse(heartbeat=15, max_msg_size=MAX_WS_MESSAGE)
    width, height = screen_size(request.query.get("width", "80"), request.query.get("height", "24"))
    await websocket.prepare(request)
    return websocket, width, height
