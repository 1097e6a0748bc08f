"""RouterClient: one httpx.AsyncClient per router, typed answers, typed failures. Its live event stream is
router/event_stream.py's, over this client: `events()`."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import json
import ssl
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote, urlsplit

import httpx

from app.services.core.bounded import MAX_JSON_BYTES, read_capped, read_head
from app.services.core.connect_cause import connect_failure
from app.services.core.errors import (
    AuthRefused,
    BadAnswer,
    RouterNotAnswering,
    RouterRefused,
    RouterUnreachable,
    SentNoAnswer,
)
from app.services.core.router_types import ModelInfo, ModelProps, RouterProps
from app.services.core.waits import within
from app.services.router.http1 import KeptGet, plain_get
from app.services.router.parse import error_message, parse_model_props, parse_models, parse_router_props

# Liveness: a router that does not answer /health within this is "not answering" (a SIGSTOPped router accepts
# connections and says nothing); the event stream asks it in its silences.
HEALTH_BOUND = 2.5
# Every bound (HEALTH_BOUND, each request's timeout, the event stream's wait for its headers) is for the router's
# own answer; over a slow link each also gets this many of the link's measured round trips (a forwarded channel
# to open, the request, the answer), so a slow but healthy link is not shown as "no answer".
LINK_ROUND_TRIPS = 4
# An answer this big (a list of ~7,000 models) is decoded with the garbage collector paused (see _collector_paused);
# a 2,000-model list (1.2 MB) decodes in ~15 ms and is left as it was.
BIG_ANSWER = 4 * 1024 * 1024


@functools.cache
def _tls() -> ssl.SSLContext:
    """httpx's default TLS context, made once: each client made its own (loading the CA bundle, ~50 ms), two per
    router client, on the way to the first list."""
    return httpx.create_ssl_context()


def _tls_for(base_url: str) -> ssl.SSLContext:
    """The CA bundle only for an https router. httpx makes its client's context up front, whatever the scheme, and
    loading the bundle was ~55 ms on the way to the first list of a plain-http one. The bare context verifies
    against no CA at all, so if it were ever used for https it would refuse, never trust."""
    if urlsplit(base_url).scheme == "https":
        return _tls()
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


@contextlib.contextmanager
def _collector_paused(size: int) -> Iterator[None]:
    """The cyclic garbage collector off while a big answer is decoded and parsed (no await in between, so nothing
    else runs meanwhile). A 20,000-model list is ~600,000 new objects and no cycles: the collections they set off
    walked the whole heap again and again and were half of json.loads's time (0.26 s -> 0.11 s)."""
    if size < BIG_ANSWER or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


class RouterClient:
    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        timeout: float = 10.0,
        name: str | None = None,
        round_trip: Callable[[], float] | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self._round_trip = round_trip  # the link's measured round trip in seconds (ssh), None locally
        self.name = name or self.base_url
        """Who the router is in messages: the machine's name where known."""
        self.api_key = api_key
        """The key this client sends (for a hook's or plugin's environment: never a command line, never a log)."""
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._headers = headers
        tls = _tls_for(self.base_url)
        # No keep-alive: the router closes some connections after proxied answers (GET /props?model=), and a
        # POST sent on such a half-closed pooled connection failed with "Server disconnected". Loopback
        # connections cost well under a millisecond.
        self._http = httpx.AsyncClient(
            base_url=self.base_url,
            headers=headers,
            timeout=timeout,
            limits=httpx.Limits(max_keepalive_connections=0),
            verify=tls,
        )
        # /health is asked every 1.5 s of silence and is the router's own answer (never proxied), so it keeps
        # one connection open: over ssh that is one forwarded channel, not a new one per check. A plain
        # http://host:port (every router llamaherd reaches, tunnelled or not) is asked through KeptGet instead,
        # at a fifth of httpx's CPU (router/http1.py); this client serves the other URLs.
        self._probe = httpx.AsyncClient(
            base_url=self.base_url,
            headers=headers,
            timeout=timeout,
            limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
            verify=tls,
        )
        url = urlsplit(self.base_url)
        plain = url.scheme == "http" and url.hostname and not url.path.strip("/")
        self._kept = KeptGet(url.hostname or "", url.port or 80, headers) if plain else None

    def bound(self, seconds: float) -> float:
        """A time bound for an answer, with room for the link's round trips."""
        rtt = self._round_trip() if self._round_trip is not None else 0.0
        return round(seconds + LINK_ROUND_TRIPS * max(0.0, rtt), 2)

    async def aclose(self) -> None:
        if self._kept is not None:
            self._kept.close()
        await self._http.aclose()
        await self._probe.aclose()

    async def __aenter__(self) -> RouterClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ---- plumbing ----

    async def _request(
        self,
        method: str,
        path: str,
        *,
        limit: int = MAX_JSON_BYTES,
        timeout: float | None = None,
        http: httpx.AsyncClient | None = None,
        **kw: Any,
    ) -> tuple[httpx.Response, bytes]:
        """One request, its body read within `limit` bytes and the whole exchange within `timeout` seconds
        (httpx's own timeouts are per read, so a router dripping a byte a second never hit them)."""
        bound = self.bound(timeout or self.timeout)
        where = f"{self.name}: {method} {path}"
        try:
            async with asyncio.timeout(bound):
                client = http or self._http
                req = client.build_request(method, path, timeout=bound, **kw)
                resp = await client.send(req, stream=True)
                try:
                    if resp.status_code >= 400:
                        raise refusal(resp, await read_head(resp), method, path)
                    body = await read_capped(resp, limit, where)
                finally:
                    await resp.aclose()
        except (TimeoutError, httpx.TimeoutException) as e:
            # Connected and written (anything but a connect timeout): a load or unload may still happen.
            if method != "GET" and not isinstance(e, httpx.ConnectTimeout | httpx.PoolTimeout):
                raise SentNoAnswer(
                    f"{where}: sent, no answer within {bound:g} s (router not answering; it may still happen)"
                ) from None
            raise RouterNotAnswering(f"{where}: router not answering (no answer within {bound:g} s)") from None
        except httpx.TransportError as e:
            raise RouterUnreachable(f"{method} {self.base_url}{path}: {transport_reason(e)}") from None
        return resp, body

    async def _json(self, method: str, path: str, **kw: Any) -> Any:
        resp, body = await self._request(method, path, **kw)
        with _collector_paused(len(body)):
            return _decoded(resp.status_code, body, self.name, method, path)

    async def _model_list(self, **kw: Any) -> list[ModelInfo]:
        """GET /models, decoded and parsed in one pause of the garbage collector (see _collector_paused)."""
        if self._kept is not None and not kw:
            # The cheap path (http1.py): every event stream re-reads the list after 30 s of silence, and through
            # httpx those reads were a third of an idle 50-router fleet's service-layer CPU once the liveness
            # checks were made cheap (router/health_beat.py).
            where = f"{self.name}: GET /models"
            host, port = self._kept.host, self._kept.port
            try:
                body = await plain_get(host, port, "/models", self._headers, MAX_JSON_BYTES, self.bound(self.timeout),
                                       where)  # fmt: skip
            except RouterRefused as e:
                if e.status == 401:
                    raise AuthRefused(401, f"API key refused ({e.message})", "GET", "/models") from None
                raise
            status = 200
        else:
            resp, body = await self._request("GET", "/models", **kw)
            status = resp.status_code
        with _collector_paused(len(body)):
            return parse_models(_decoded(status, body, self.name, "GET", "/models"))

    # ---- API ----

    async def health(self, timeout: float | None = None) -> bool:
        if self._kept is not None:  # the cheap path: see http1.py
            bound = self.bound(timeout or self.timeout)
            health_ok(await self._kept.get("/health", MAX_JSON_BYTES, bound, f"{self.name}: GET /health"), self.name)
            return True
        body = await self._json("GET", "/health", timeout=timeout, http=self._probe)
        if not isinstance(body, dict) or body.get("status") != "ok":
            raise BadAnswer(f'GET /health: expected {{"status": "ok"}}, got {str(body)[:120]}')
        return True

    @property
    def plain_address(self) -> tuple[str, int] | None:
        """Host and port where the router is a plain `http://host:port` (every router llamaherd reaches, tunnelled or
        not), which router/http1.py and router/health_beat.py speak to directly; None for any other URL."""
        return (self._kept.host, self._kept.port) if self._kept is not None else None

    @property
    def headers(self) -> dict[str, str]:
        """What every request carries (the key's Authorization, where there is one)."""
        return dict(self._headers)

    async def props(self) -> RouterProps:
        return parse_router_props(await self._json("GET", "/props"))

    async def models(self) -> list[ModelInfo]:
        return await self._model_list()

    async def reload(self) -> list[ModelInfo]:
        """Re-read the preset (GET /models?reload=1); running models whose section changed are unloaded."""
        return await self._model_list(params={"reload": "1"})

    async def load(self, model: str) -> bool:
        """Ask to load. True if asked, False if it was already running (400 "already running" is not an error)."""
        try:
            await self._json("POST", "/models/load", json={"model": model})
        except RouterRefused as e:
            if e.status == 400 and "already running" in e.message:
                return False
            if e.status == 404:
                raise RouterRefused(
                    404, f"no model named {model!r} here ({e.message})", "POST", "/models/load"
                ) from None
            raise
        return True

    async def unload(self, model: str) -> None:
        await self._json("POST", "/models/unload", json={"model": model})

    async def download(self, repo: str) -> None:
        """POST /models: the router starts a download child for `user/repo[:QUANT]` into its cache and answers at
        once; what happens next is only in its events and its log (hub/pull.py follows both)."""
        await self._json("POST", "/models", json={"model": repo})

    async def remove(self, model: str, timeout: float | None = None) -> None:
        """DELETE /models?model=ID: a cache model's files removed (it is stopped first, and waited for)."""
        await self._json("DELETE", f"/models?model={quote(model, safe='')}", timeout=timeout)

    async def model_props(self, model: str) -> ModelProps:
        """The loaded child's own /props, without loading it (autoload=false)."""
        path = f"/props?model={quote(model, safe='')}&autoload=false"
        return parse_model_props(model, await self._json("GET", path))

    async def child_metrics(self, model: str, limit: int, timeout: float | None = None) -> str:
        """The loaded child's Prometheus text, without loading it (autoload=false: an unloaded model answers 400).
        Asking /metrics does not keep a child awake (the router's idle timer ignores it)."""
        path = f"/metrics?model={quote(model, safe='')}&autoload=false"
        url = urlsplit(self.base_url)
        if url.scheme == "http" and url.hostname and not url.path.strip("/"):  # the cheap path: see http1.py
            port = url.port or 80
            where = f"{self.name}: GET {path}"
            body = await plain_get(url.hostname, port, path, self._headers, limit, timeout or self.timeout, where)
        else:
            _, body = await self._request("GET", path, limit=limit, timeout=timeout)
        return body.decode("utf-8", errors="replace")

    async def child_slots(self, model: str, limit: int, timeout: float | None = None) -> Any:
        """The loaded child's slots, without loading it. Unlike /metrics, a /slots request counts as activity:
        asked every few seconds, it kept a child with --sleep-idle-seconds from ever sleeping."""
        path = f"/slots?model={quote(model, safe='')}&autoload=false"
        return await self._json("GET", path, limit=limit, timeout=timeout)

    # ---- live events ----

    async def open_stream(self, path: str, headers_within: float) -> tuple[Any, httpx.Response]:
        """A GET whose answer is read as it comes (the event stream): its context manager and its answer, once the
        headers are in. No read timeout, since silence is normal on a stream; the headers bounded by
        `headers_within` seconds."""
        where = f"{self.name}: GET {path}"
        cm = self._http.stream("GET", path, timeout=httpx.Timeout(self.bound(self.timeout), read=None))
        try:
            # httpx's read timeout is off for the stream (silence is normal there), which also left the wait
            # for its headers unbounded: a router that accepted the connection and said nothing hung us forever.
            resp = await within(cm.__aenter__(), self.bound(headers_within))
        except (TimeoutError, httpx.TimeoutException):
            raise RouterNotAnswering(
                f"{where}: router not answering (no headers within {self.bound(headers_within):g} s)"
            ) from None
        except httpx.TransportError as e:
            raise RouterUnreachable(f"GET {self.base_url}{path}: {transport_reason(e)}") from None
        return cm, resp

    async def post_stream(self, path: str, body: bytes, headers_within: float) -> tuple[Any, httpx.Response]:
        """A POST whose answer is read as it comes (a streamed completion): its context manager and its 2xx answer,
        once the headers are in within `headers_within` seconds (plus the link's round trips). A 4xx/5xx answer is
        read (its head) and raised as the router's refusal. No read timeout: the caller bounds the body."""
        where = f"{self.name}: POST {path}"
        bound = self.bound(headers_within)
        cm = self._http.stream(
            "POST",
            path,
            content=body,
            headers={"Content-Type": "application/json"},
            timeout=httpx.Timeout(bound, read=None),
        )
        try:
            resp = await within(cm.__aenter__(), bound)
        except (TimeoutError, httpx.TimeoutException):
            raise RouterNotAnswering(f"{where}: no answer within {bound:g} s (sent; not answering)") from None
        except httpx.TransportError as e:
            raise RouterUnreachable(f"POST {self.base_url}{path}: {transport_reason(e)}") from None
        if resp.status_code >= 400:
            try:
                head = await within(read_head(resp), bound)
            except (TimeoutError, httpx.HTTPError):
                head = ""
            finally:
                await cm.__aexit__(None, None, None)
            raise refusal(resp, head, "POST", path.split("?", 1)[0])
        return cm, resp


def health_ok(raw: bytes, name: str) -> None:
    """A 2xx /health body judged: `{"status": "ok"}`, or BadAnswer saying what came instead."""
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise BadAnswer(f"{name}: GET /health: the router answered with something that is not JSON: "
                        f"{raw[:120].decode('utf-8', errors='replace')!r}") from None  # fmt: skip
    if not isinstance(body, dict) or body.get("status") != "ok":
        raise BadAnswer(f'GET /health: expected {{"status": "ok"}}, got {str(body)[:120]}')


def _decoded(status: int, body: bytes, name: str, method: str, path: str) -> Any:
    try:
        return json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        text = body[:120].decode("utf-8", errors="replace")
        raise BadAnswer(
            f"{name}: {method} {path}: the router answered {status} with something that is not JSON: {text!r}"
        ) from None


def refusal(resp: httpx.Response, body: str, method: str, path: str) -> RouterRefused:
    """The router's 4xx/5xx answer (`body`, its head) as a typed failure."""
    return refused(resp.status_code, body, method, path)


def refused(status: int, body: str, method: str, path: str) -> RouterRefused:
    """A 4xx/5xx answer with this status and body (its head) as a typed failure."""
    msg = error_message(body)
    if status == 401:
        return AuthRefused(401, f"API key refused ({msg})", method, path)
    return RouterRefused(status, msg, method, path)


def transport_reason(e: BaseException) -> str:
    """An httpx failure in words, its cause first (refused, timed out, no route, name not resolved, TLS): every
    ConnectError used to be called "connection refused", and a card's "not answering" hid which it was."""
    return connect_failure(e)
