"""`llamaherd serve`: the dashboard in a browser and the fleet as Prometheus metrics, behind a token (app/web/)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import os
import shlex
import signal
import ssl
import sys

from app.cli.context import CliContext
from app.cli.output import err
from app.errors import ConfigError

DEFAULT_PORT = 8765
DEFAULT_MAX_SESSIONS = 4


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def tls_context(cert: str | None, key: str | None) -> ssl.SSLContext | None:
    if not cert and not key:
        return None
    if not (cert and key):
        raise ConfigError("--tls-cert and --tls-key go together: give both, or neither")
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        ctx.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as e:
        raise ConfigError(f"cannot use --tls-cert {cert} / --tls-key {key}: {e}") from None
    return ctx


def session_command(args: argparse.Namespace) -> str:
    """What runs one browser session's dashboard: this llamaherd, on the same config. No secret in it (`ps`)."""
    argv = [sys.executable, "-m", "app"]
    if args.config:
        argv += ["--config", args.config]
    return "exec " + shlex.join([*argv, "dashboard"])


def check_usage(args: argparse.Namespace) -> None:
    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port {args.port}: a port is 0 to 65535")
    if args.max_sessions < 1:
        raise ConfigError(f"--max-sessions {args.max_sessions}: at least 1")
    if not is_loopback(args.host) and not args.public:
        raise ConfigError(
            f"--host {args.host} is not a loopback address: anyone who can reach it can try the token. "
            "Add --public to mean it (and --tls-cert/--tls-key, or a reverse proxy with TLS in front)"
        )


async def cmd_serve(ctx: CliContext, args: argparse.Namespace) -> int:
    from app.services.fleet import Fleet
    from app.services.history.store import HistoryStore
    from app.services.metrics.collector import FleetMetrics
    from app.web.server import BrowserSessions, ServeOptions, start_server
    from app.web.token import TOKEN_ENV, serve_token, token_path

    from_env = bool(os.environ.get(TOKEN_ENV))
    if args.show_token:
        print(serve_token())
        return 0
    check_usage(args)
    tls = tls_context(args.tls_cert, args.tls_key)
    token = serve_token()
    if not is_loopback(args.host) and tls is None:
        err(
            f"warning: serving on {args.host} over plain HTTP: the token and the dashboard cross the network "
            "unencrypted. Give --tls-cert/--tls-key, or put a reverse proxy with TLS in front"
        )
    options = ServeOptions(
        host=args.host,
        port=args.port,
        metrics_only=args.metrics_only,
        max_sessions=args.max_sessions,
        session_command=session_command(args),
        public_url=args.public_url.rstrip("/") if args.public_url else None,
        ssl_context=tls,
    )
    sessions: BrowserSessions | None = None
    history: HistoryStore | None = None
    recording: asyncio.Task[None] | None = None
    if args.sessions == "shared" and not args.metrics_only:
        # The tabs' dashboards draw for xterm.js, which shows 24-bit colour; Textual reads this when imported.
        os.environ.setdefault("TEXTUAL_COLOR_SYSTEM", "truecolor")
        from app.services.history.recorder import HistoryRecorder
        from app.web.shared import ServedFleet, SharedSessions

        fleet: Fleet = ServedFleet(ctx.config)
        history = HistoryStore()
        fleet.history = history
        sessions = SharedSessions(ctx.config, fleet, history, args.max_sessions)
        recording = asyncio.create_task(HistoryRecorder(fleet, history).run(), name="history recorder")
    else:
        fleet = Fleet(ctx.config)
    fleet.asked_by = "llamaherd serve"
    metrics = FleetMetrics(fleet)
    await fleet.start()
    try:
        try:
            running = await start_server(options, token, metrics, sessions)
        except OSError as e:
            err(f"cannot listen on {args.host}:{args.port}: {e.strerror or e}")
            return 1
        try:
            host, port = running.addresses[0]
            scheme = "https" if tls else "http"
            shown = f"[{host}]" if ":" in host else host
            base = options.public_url or f"{scheme}://{shown}:{port}"
            where = f"${TOKEN_ENV}" if from_env else str(token_path())
            if not args.metrics_only:
                print(f"llamaherd serve: the dashboard at {base}/ (the first visit adds ?token=TOKEN)", flush=True)
            print(f"llamaherd serve: metrics at {base}/metrics (Authorization: Bearer TOKEN)", flush=True)
            print(f"llamaherd serve: the token is in {where} (`llamaherd serve --show-token` prints it)", flush=True)
            await stopped()
        finally:
            await running.close()
    finally:
        if recording is not None:
            recording.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await recording
        await fleet.close()
        if history is not None:
            history.close()
    return 0


async def stopped() -> None:
    """Return on SIGINT or SIGTERM (systemd's stop)."""
    done = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, done.set)
    try:
        await done.wait()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(Exception):
                loop.remove_signal_handler(sig)


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "serve",
        help="serve the dashboard in a browser and the fleet's Prometheus metrics, behind a token",
        description="Serve the dashboard itself in a browser (each browser session runs its own dashboard) and the "
        "fleet's metrics at /metrics, in Prometheus' text format. Every path needs the token: from "
        "$LLAMAHERD_SERVE_TOKEN, or made once and kept 0600 in llamaherd's state directory "
        "(--show-token prints it). A browser's first visit adds ?token=TOKEN; scrapers send "
        "Authorization: Bearer TOKEN.",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0: any free one)")
    p.add_argument("--public", action="store_true", help="allow a --host that is not a loopback address")
    p.add_argument("--tls-cert", metavar="PEM", help="serve HTTPS with this certificate chain (with --tls-key)")
    p.add_argument("--tls-key", metavar="PEM", help="the certificate's private key")
    p.add_argument(
        "--public-url",
        metavar="URL",
        help="the address browsers use, behind a reverse proxy (default: the address each request came to)",
    )
    p.add_argument(
        "--metrics-only", action="store_true", help="serve /metrics alone, no dashboard sessions (a systemd unit)"
    )
    p.add_argument(
        "--max-sessions",
        type=int,
        default=DEFAULT_MAX_SESSIONS,
        metavar="N",
        help=f"browser sessions at once, each a dashboard process of its own (default {DEFAULT_MAX_SESSIONS})",
    )
    p.add_argument(
        "--sessions",
        choices=("shared", "process"),
        default="shared",
        help="shared (default): every browser tab is a dashboard in this process over its one fleet connection; "
        "process: each tab runs `llamaherd dashboard` in a process of its own, with its own connections",
    )
    p.add_argument("--show-token", action="store_true", help="print the token (only the token) and exit")
    p.set_defaults(func=cmd_serve)
