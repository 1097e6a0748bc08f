"""A plain HTTP/1.1 GET asked again and again on one kept connection: the router's /health, every 1.5 s of silence.

httpx spent ~1.1 ms of CPU per /health on its kept connection, this ~0.2 ms: with 5 managed routers the checks
were a sixth of an idle dashboard's CPU. One connection, reused: locally no TCP set-up per check, over ssh one
forwarded channel rather than one per check. A kept connection the router closed meanwhile (its keep-alive ends
after some requests or seconds) is replaced once, at once; after any failure the connection is dropped, since an
answer that comes late would be read as the next one's. Answers are hostile input, bounded as in router/http1.py.
"""

from __future__ import annotations

import asyncio

from app.services.core.bounded import MAX_ERROR_BYTES
from app.services.core.errors import RouterNotAnswering, RouterUnreachable
from app.services.router.http1 import MAX_HEAD, body_or_refused, get_request, parse_head, read_body, read_until


class KeptGet:
    def __init__(self, host: str, port: int, headers: dict[str, str]) -> None:
        self.host = host
        self.port = port
        self.headers = headers
        self._conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self.connections = 0
        """Connections opened so far (a test counts them)."""

    def close(self) -> None:
        if self._conn is not None:
            self._conn[1].close()
            self._conn = None

    async def get(self, path: str, limit: int, timeout: float, what: str) -> bytes:
        """The body of a 2xx answer (at most `limit` bytes); RouterRefused with the router's words for 4xx/5xx."""
        request = get_request(self.host, self.port, path, self.headers, close=False)
        try:
            async with asyncio.timeout(timeout):
                status, body = await self._ask(request, limit, what)
        except TimeoutError:
            self.close()
            raise RouterNotAnswering(f"{what}: router not answering (no answer within {timeout:g} s)") from None
        except (OSError, asyncio.IncompleteReadError) as e:
            self.close()
            raise RouterUnreachable(f"{what}: {e or type(e).__name__}") from None
        except BaseException:
            self.close()  # a malformed answer, a cancel: what is left on the connection is unknown
            raise
        return body_or_refused(status, body, path)

    async def _ask(self, request: bytes, limit: int, what: str) -> tuple[int, bytes]:
        for attempt in (1, 2):
            if self._conn is not None and self._conn[0].at_eof():
                self.close()  # the router closed it while it was idle
            reused = self._conn is not None
            if self._conn is None:
                self._conn = await asyncio.open_connection(self.host, self.port, limit=MAX_HEAD)
                self.connections += 1
            reader, writer = self._conn
            try:
                writer.write(request)
                raw = await read_until(reader, b"\r\n\r\n", what)
            except (ConnectionError, asyncio.IncompleteReadError) as e:
                self.close()
                nothing = not isinstance(e, asyncio.IncompleteReadError) or not e.partial
                if reused and nothing and attempt == 1:
                    continue  # closed by the router before it read this request: once more, on a new connection
                raise
            status, fields = parse_head(raw, what)
            body = await read_body(reader, fields, limit if status < 400 else MAX_ERROR_BYTES, what, cut=status >= 400)
            keeps = (
                status < 400
                and fields.get("content-length", "").isdigit()
                and "chunked" not in fields.get("transfer-encoding", "").lower()
                and fields.get("connection", "").lower() != "close"
            )
            if not keeps:
                self.close()  # read to its end, or cut: nothing more to read on it
            return status, body
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises
