"""RouterClient: one httpx.AsyncClient per router, typed answers, typed failures, and the live event stream."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import json
import ssl
from collections.abc import AsyncGenerator, Callable, Iterator
from typing import Any
from urllib.parse import quote, urlsplit

import httpx

from app.services.core.backoff import Backoff
from app.services.core.bounded import MAX_JSON_BYTES, read_capped, read_head, sse_payloads
from app.services.core.errors import (
    AuthRefused,
    BadAnswer,
    RouterNotAnswering,
    RouterRefused,
    RouterUnreachable,
    SentNoAnswer,
)
from app.services.core.router_types import (
    ModelInfo,
    ModelListEvent,
    ModelProps,
    ModelsReloadEvent,
    RouterEvent,
    RouterProps,
    StreamState,
    StreamStateEvent,
)
from app.services.core.waits import within
from app.services.router.kept_get import KeptGet
from app.services.router.parse import error_message, parse_event, parse_model_props, parse_models, parse_router_props
from app.services.router.plain_get import plain_get

# The SSE stream has no keep-alives, so silence is normal; the full list is re-read this often while idle.
REFRESH_INTERVAL = 30.0
POLL_INTERVAL = 2.0
# Liveness: the stream has no keep-alives, so after this much silence /health is asked, and a router that does
# not answer it within HEALTH_BOUND is "not answering" (a SIGSTOPped router accepts connections and says nothing).
HEALTH_EVERY = 1.5
HEALTH_BOUND = 2.5
# A stream that sends no headers within this is reported, not waited on forever.
HEADERS_TIMEOUT = 4.0
# Every bound above is for the router's own answer; over a slow link each also gets this many of the link's
# measured round trips (a forwarded channel to open, the request, the answer), so a slow but healthy link is not
# shown as "no answer".
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
        # at a fifth of httpx's CPU (router/kept_get.py); this client serves the other URLs.
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
                        raise _refusal(resp, await read_head(resp), method, path)
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
            raise RouterUnreachable(f"{method} {self.base_url}{path}: {_reason(e)}") from None
        return resp, body

    async def _json(self, method: str, path: str, **kw: Any) -> Any:
        resp, body = await self._request(method, path, **kw)
        with _collector_paused(len(body)):
            return _decoded(resp, body, self.name, method, path)

    async def _model_list(self, **kw: Any) -> list[ModelInfo]:
        """GET /models, decoded and parsed in one pause of the garbage collector (see _collector_paused)."""
        resp, body = await self._request("GET", "/models", **kw)
        with _collector_paused(len(body)):
            return parse_models(_decoded(resp, body, self.name, "GET", "/models"))

    # ---- API ----

    async def health(self, timeout: float | None = None) -> bool:
        if self._kept is not None:  # the cheap path: see kept_get
            bound = self.bound(timeout or self.timeout)
            raw = await self._kept.get("/health", MAX_JSON_BYTES, bound, f"{self.name}: GET /health")
            try:
                body = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError):
                raise BadAnswer(f"{self.name}: GET /health: the router answered with something that is not JSON: "
                                f"{raw[:120].decode('utf-8', errors='replace')!r}") from None  # fmt: skip
        else:
            body = await self._json("GET", "/health", timeout=timeout, http=self._probe)
        if not isinstance(body, dict) or body.get("status") != "ok":
            raise BadAnswer(f'GET /health: expected {{"status": "ok"}}, got {str(body)[:120]}')
        return True

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

    async def model_props(self, model: str) -> ModelProps:
        """The loaded child's own /props, without loading it (autoload=false)."""
        path = f"/props?model={quote(model, safe='')}&autoload=false"
        return parse_model_props(model, await self._json("GET", path))

    async def child_metrics(self, model: str, limit: int, timeout: float | None = None) -> str:
        """The loaded child's Prometheus text, without loading it (autoload=false: an unloaded model answers 400).
        Asking /metrics does not keep a child awake (the router's idle timer ignores it)."""
        path = f"/metrics?model={quote(model, safe='')}&autoload=false"
        url = urlsplit(self.base_url)
        if url.scheme == "http" and url.hostname and not url.path.strip("/"):  # the cheap path: see plain_get
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

    async def events(
        self,
        *,
        refresh_interval: float = REFRESH_INTERVAL,
        poll_interval: float = POLL_INTERVAL,
        backoff: Backoff | None = None,
    ) -> AsyncGenerator[RouterEvent, None]:
        """Every router event, forever, across disconnects and restarts.

        Each (re)connect yields a StreamStateEvent and then the full list (ModelListEvent), because SSE replays
        nothing: what changed while we were away is only in the list. The list is also re-read on
        models_reload and every `refresh_interval` seconds of silence. Where /models/sse does not exist the
        stream polls /models every `poll_interval` seconds instead and says so.

        A router that stops answering (its /health, or the stream's headers, not within their bound) yields
        StreamStateEvent(NOT_ANSWERING); while connected the session stays open and says "connected" again,
        with a fresh list, as soon as /health answers.
        """
        backoff = backoff or Backoff()
        while True:
            state = StreamState.DISCONNECTED
            try:
                # Closed here, not by the garbage collector in a task of its own, when our caller stops reading:
                # its reader task and connection end with it (one was found still reading at quit).
                async with contextlib.aclosing(self._sse_session(refresh_interval, backoff)) as session:
                    async for ev in session:
                        yield ev
                reason = "event stream closed by the router"
            except _NoSse:
                try:
                    async with contextlib.aclosing(self._poll_session(poll_interval, backoff)) as polls:
                        async for ev in polls:
                            yield ev
                    reason = "polling stopped"
                except RouterNotAnswering as e:
                    state, reason = StreamState.NOT_ANSWERING, str(e)
                except (RouterUnreachable, RouterRefused, BadAnswer) as e:
                    reason = str(e)
            except RouterNotAnswering as e:
                state, reason = StreamState.NOT_ANSWERING, str(e)
            except (RouterUnreachable, RouterRefused, BadAnswer) as e:
                reason = str(e)
            except (httpx.TransportError, httpx.StreamError) as e:
                reason = _reason(e)
            delay = backoff.next()
            yield StreamStateEvent(model="", state=state, reason=reason, retry_in=delay)
            await asyncio.sleep(delay)

    async def _open_stream(self) -> tuple[Any, httpx.Response]:
        where = f"{self.name}: GET /models/sse"
        cm = self._http.stream("GET", "/models/sse", timeout=httpx.Timeout(self.bound(self.timeout), read=None))
        try:
            # httpx's read timeout is off for the stream (silence is normal there), which also left the wait
            # for its headers unbounded: a router that accepted the connection and said nothing hung us forever.
            resp = await within(cm.__aenter__(), self.bound(HEADERS_TIMEOUT))
        except (TimeoutError, httpx.TimeoutException):
            raise RouterNotAnswering(
                f"{where}: router not answering (no headers within {self.bound(HEADERS_TIMEOUT):g} s)"
            ) from None
        except httpx.TransportError as e:
            raise RouterUnreachable(f"GET {self.base_url}/models/sse: {_reason(e)}") from None
        return cm, resp

    async def _sse_session(self, refresh_interval: float, backoff: Backoff) -> AsyncGenerator[RouterEvent, None]:
        # Bounded: a router flooding events waits for us instead of filling memory.
        queue: asyncio.Queue[str | BaseException | None] = asyncio.Queue(maxsize=256)
        cm, resp = await self._open_stream()
        reader: asyncio.Task[None] | None = None
        try:
            if resp.status_code == 404:
                raise _NoSse()
            if resp.status_code >= 400:
                raise _refusal(resp, await read_head(resp), "GET", "/models/sse")
            reader = asyncio.create_task(_read_sse(resp, queue, f"{self.name}: GET /models/sse"))
            # The list is read after the stream is open, so no change can fall between the two.
            models = await self._watched_models()
            yield StreamStateEvent(model="", state=StreamState.CONNECTED)
            yield ModelListEvent(model="*", models=tuple(models))
            # The backoff is reset by the first event or answered /health, not by the connect: a router that
            # connects and then sends garbage (a line without end) is retried ever more slowly, not every 0.5 s.
            loop = asyncio.get_running_loop()
            heard = loop.time()  # the last time the router said anything
            answering = True
            while True:
                try:
                    # Not asyncio.wait_for: on 3.11 it loses a cancel that meets an arriving event (core/waits.py).
                    item = await within(queue.get(), min(HEALTH_EVERY, refresh_interval))
                except TimeoutError:
                    alive, why = await self._answers()
                    if alive:
                        backoff.reset()
                    if alive != answering:
                        answering = alive
                        if not alive:
                            yield StreamStateEvent(model="", state=StreamState.NOT_ANSWERING, reason=why)
                            continue
                        yield StreamStateEvent(model="", state=StreamState.CONNECTED)
                        heard = 0.0  # what changed while it was silent is only in the list
                    if alive and loop.time() - heard >= refresh_interval:
                        yield ModelListEvent(model="*", models=tuple(await self._watched_models()))
                        heard = loop.time()
                    continue
                if item is None:
                    return
                if isinstance(item, BaseException):
                    raise item
                heard = loop.time()
                backoff.reset()
                if not answering:
                    answering = True
                    yield StreamStateEvent(model="", state=StreamState.CONNECTED)
                ev = parse_event(item)
                yield ev
                if isinstance(ev, ModelsReloadEvent):
                    yield ModelListEvent(model="*", models=tuple(await self._watched_models()))
        finally:
            if reader is not None:
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await reader
            with contextlib.suppress(Exception):
                await cm.__aexit__(None, None, None)

    async def _watched_models(self) -> list[ModelInfo]:
        """GET /models, with /health asked beside it while it takes long: a router that stops answering in the
        middle is reported within HEALTH_EVERY + HEALTH_BOUND, not after the whole request timeout (a big list
        over a slow link may take long and still be fine, as long as /health answers)."""
        task = asyncio.ensure_future(self.models())
        try:
            while True:
                done, _ = await asyncio.wait({task}, timeout=HEALTH_EVERY)
                if done:
                    return task.result()
                alive, why = await self._answers()
                if not alive and not task.done():
                    raise RouterNotAnswering(why)
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    async def _answers(self) -> tuple[bool, str]:
        """Whether /health answers within HEALTH_BOUND, and why not."""
        try:
            await self.health(timeout=HEALTH_BOUND)
        except RouterNotAnswering:
            why = f"no answer within {self.bound(HEALTH_BOUND):g} s"
            return False, f"{self.name}: router not answering (/health: {why})"
        except (RouterUnreachable, RouterRefused, BadAnswer) as e:
            return False, f"{self.name}: router not answering (/health: {e})"
        return True, ""

    async def _poll_session(self, poll_interval: float, backoff: Backoff) -> AsyncGenerator[RouterEvent, None]:
        models = await self._watched_models()
        backoff.reset()
        yield StreamStateEvent(
            model="", state=StreamState.POLLING, reason="this router has no /models/sse; polling /models"
        )
        yield ModelListEvent(model="*", models=tuple(models))
        while True:
            await asyncio.sleep(poll_interval)
            fresh = await self._watched_models()
            if fresh != models:
                models = fresh
                yield ModelListEvent(model="*", models=tuple(models))


class _NoSse(Exception):
    """The router has no /models/sse (an older llama-server)."""


async def _read_sse(resp: httpx.Response, queue: asyncio.Queue[str | BaseException | None], what: str) -> None:
    """Collect `data:` lines into events; a blank line ends one (several data lines join with \\n)."""
    try:
        async for payload in sse_payloads(resp.aiter_bytes(), what):
            await queue.put(payload)
        await queue.put(None)
    except (httpx.TransportError, httpx.StreamError) as e:
        await queue.put(RouterUnreachable(f"event stream lost: {_reason(e)}"))
    except BadAnswer as e:
        await queue.put(e)


def _decoded(resp: httpx.Response, body: bytes, name: str, method: str, path: str) -> Any:
    try:
        return json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        text = body[:120].decode("utf-8", errors="replace")
        raise BadAnswer(
            f"{name}: {method} {path}: the router answered {resp.status_code} with something that is not JSON: {text!r}"
        ) from None


def _refusal(resp: httpx.Response, body: str, method: str, path: str) -> RouterRefused:
    msg = error_message(body)
    if resp.status_code == 401:
        return AuthRefused(401, f"API key refused ({msg})", method, path)
    return RouterRefused(resp.status_code, msg, method, path)


def _reason(e: BaseException) -> str:
    text = str(e) or type(e).__name__
    if "Connection refused" in text or "connect" in type(e).__name__.lower():
        return f"connection refused ({text})" if "refused" not in text else text
    return text
