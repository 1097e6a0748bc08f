"""One plain HTTP/1.1 GET over a fresh TCP connection, for the activity poll's /metrics requests.

Why not httpx: the poll asks every loaded model every 2 s (20 models: 10 requests a second), the router closes the
connection after every proxied answer (`Connection: close`, so nothing is saved by keeping one), and httpx spent
~5 ms of CPU per request on that path where this spends ~0.5 ms (bench/activity_cost.py): the difference between
4 % of a core and the issue's budget of 0.5 %. Only `http://host:port` is spoken here (routers are reached on
loopback, through the ssh tunnel for remote ones); anything else goes through httpx.

Every answer is hostile input: the whole exchange is bounded in time here, the head, each chunk-size line and the
body in router/http1.py.
"""

from __future__ import annotations

import asyncio
import contextlib

from app.services.core.bounded import MAX_ERROR_BYTES
from app.services.core.errors import RouterNotAnswering, RouterUnreachable
from app.services.router.http1 import MAX_HEAD, body_or_refused, get_request, parse_head, read_body, read_until


async def plain_get(
    host: str, port: int, path: str, headers: dict[str, str], limit: int, timeout: float, what: str
) -> bytes:
    """The body of a 2xx answer (at most `limit` bytes); RouterRefused with the router's words for 4xx/5xx."""
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(host, port, limit=MAX_HEAD)
            try:
                writer.write(get_request(host, port, path, headers, close=True))
                status, fields = parse_head(await read_until(reader, b"\r\n\r\n", what), what)
                room = limit if status < 400 else MAX_ERROR_BYTES
                body = await read_body(reader, fields, room, what, cut=status >= 400)
            finally:
                writer.close()
                with contextlib.suppress(OSError):
                    await writer.wait_closed()
    except TimeoutError:
        raise RouterNotAnswering(f"{what}: router not answering (no answer within {timeout:g} s)") from None
    except (OSError, asyncio.IncompleteReadError) as e:
        raise RouterUnreachable(f"{what}: {e or type(e).__name__}") from None
    return body_or_refused(status, body, path)
