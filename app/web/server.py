"""The web server of `llamaherd serve`: the dashboard page and its websocket (textual-serve's), `/metrics`, and the
token in front of all of them; or, with `metrics_only`, `/metrics` alone.

The aiohttp application is textual-serve's own (`Server._make_app`: the page, its static files, the websocket), with
our websocket handler (sessions.py: bounded, killed by pid when they will not leave), our token middleware, and
`/metrics`. It runs on our event loop beside the Fleet the metrics read, with no access log: a first visit's URL
carries the token.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import ssl
from dataclasses import dataclass
from typing import Any, Protocol

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST
from textual_serve.server import Server

from app.services.metrics.collector import FleetMetrics
from app.web.auth import token_middleware
from app.web.sessions import Sessions

# textual-serve's page links a stylesheet from a font service (its only address outside this server).
_THIRD_PARTY_LINK = re.compile(r"<link[^>]*href=\"https?://[^\"]*\"[^>]*/>", re.S)
# A Host header that may be put back into the page (the websocket's address): a name, an IPv4 or [IPv6], a port.
_SAFE_HOST = re.compile(r"[A-Za-z0-9.\-]{1,253}(:[0-9]{1,5})?|\[[0-9A-Fa-f:.]{2,45}\](:[0-9]{1,5})?\Z")


@dataclass(frozen=True)
class ServeOptions:
    host: str = "127.0.0.1"
    port: int = 8765
    metrics_only: bool = False
    max_sessions: int = 4
    session_command: str = ""
    """The shell command that runs one browser session's dashboard (it must carry no secret: `ps` shows it)."""
    public_url: str | None = None
    """The address browsers reach us at (behind a reverse proxy); None: taken from each request's Host header."""
    ssl_context: ssl.SSLContext | None = None


class BrowserSessions(Protocol):
    """What the server asks of the keeper of browser sessions (sessions.py: a process each; shared.py: in here)."""

    async def handle(self, request: web.Request) -> web.StreamResponse: ...

    async def close_all(self) -> None: ...


class DashboardServer(Server):
    """textual-serve's Server, for its page and static files; the rest is ours."""

    def __init__(self, options: ServeOptions, sessions: BrowserSessions) -> None:
        super().__init__(options.session_command, host=options.host, port=options.port, title="llamaherd")
        self.options = options
        self.sessions = sessions

    async def handle_index(self, request: web.Request) -> Any:
        """The page, its websocket address made from the URL this request came to (or --public-url), and without
        textual-serve's web font from a third party: a dashboard on a lab network must not need (or tell) the
        internet; the terminal falls back to the browser's monospace font."""
        self.public_url = self.options.public_url or self._request_url(request)
        # No await between setting the address and the page's use of it: one request's address is its own.
        page = await super().handle_index(request)
        if isinstance(page, web.Response) and page.text:
            page.text = _THIRD_PARTY_LINK.sub("", page.text)
        return page

    def _request_url(self, request: web.Request) -> str:
        host = request.host if _SAFE_HOST.fullmatch(request.host or "") else f"{self.options.host}:{self.options.port}"
        return f"{'https' if self.options.ssl_context else 'http'}://{host}"

    async def handle_websocket(self, request: web.Request) -> web.StreamResponse:  # type: ignore[override]
        """A session of its own (sessions.py), or a 503 when --max-sessions are open."""
        return await self.sessions.handle(request)

    async def on_startup(self, app: web.Application) -> None:
        """textual-serve prints a banner here; the CLI says what is served instead."""


def metrics_handler(metrics: FleetMetrics) -> Any:
    async def handle(request: web.Request) -> web.Response:
        # Rendered on the loop, from held state: ~6 ms at 50 machines × 20 models (bench/metrics_scrape.py).
        return web.Response(body=metrics.render(), headers={"Content-Type": CONTENT_TYPE_LATEST})

    return handle


async def _metrics_only_index(request: web.Request) -> web.Response:
    return web.Response(text="llamaherd serve --metrics-only: the fleet's metrics are at /metrics\n")


async def make_web_app(
    options: ServeOptions, token: str, metrics: FleetMetrics, sessions: BrowserSessions
) -> web.Application:
    if options.metrics_only:
        app = web.Application()
        app.router.add_get("/", _metrics_only_index)
    else:
        app = await DashboardServer(options, sessions)._make_app()
    # Secure when browsers reach us over TLS: ours, or a reverse proxy's in front of an https:// --public-url.
    secure = options.ssl_context is not None or (options.public_url or "").startswith("https://")
    app.middlewares.append(token_middleware(token, secure_cookie=secure))
    app.router.add_get("/metrics", metrics_handler(metrics))
    return app


@dataclass
class Running:
    """A started server: where it listens, and how to stop it."""

    runner: web.AppRunner
    sessions: BrowserSessions
    follower: asyncio.Task[None]
    addresses: list[tuple[str, int]]

    async def close(self) -> None:
        await self.sessions.close_all()
        self.follower.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.follower
        await self.runner.cleanup()


async def start_server(
    options: ServeOptions, token: str, metrics: FleetMetrics, sessions: BrowserSessions | None = None
) -> Running:
    """Listen, and follow the fleet's events for the metrics; the Fleet itself is started by the caller.
    `sessions`: the browser sessions' keeper (default: a dashboard process per tab, sessions.py)."""
    sessions = sessions or Sessions(options.session_command, options.max_sessions)
    app = await make_web_app(options, token, metrics, sessions)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    follower = asyncio.create_task(metrics.follow(), name="metrics-follow")
    try:
        site = web.TCPSite(runner, options.host, options.port, ssl_context=options.ssl_context)
        await site.start()
    except BaseException:
        follower.cancel()
        await runner.cleanup()
        raise
    addresses = [(str(a[0]), int(a[1])) for a in runner.addresses]
    return Running(runner, sessions, follower, addresses)
