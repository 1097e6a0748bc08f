"""RouterClient: one httpx.AsyncClient per router, typed answers, typed failures, and the live event stream."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any
from urllib.parse import quote

import httpx

from app.services.backoff import Backoff
from app.services.errors import AuthRefused, BadAnswer, RouterRefused, RouterUnreachable
from app.services.router_parse import (
    error_message,
    parse_event,
    parse_model_props,
    parse_models,
    parse_router_props,
)
from app.services.types import (
    ModelInfo,
    ModelListEvent,
    ModelProps,
    ModelsReloadEvent,
    RouterEvent,
    RouterProps,
    StreamStateEvent,
)

# The SSE stream has no keep-alives, so silence is normal; the full list is re-read this often while idle.
REFRESH_INTERVAL = 30.0
POLL_INTERVAL = 2.0


class RouterClient:
    def __init__(self, base_url: str, api_key: str | None = None, timeout: float = 10.0) -> None:
        self.base_url = base_url.rstrip("/")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        # No keep-alive: the router closes some connections after proxied answers (GET /props?model=), and a
        # POST sent on such a half-closed pooled connection failed with "Server disconnected". Loopback
        # connections cost well under a millisecond.
        self._http = httpx.AsyncClient(
            base_url=self.base_url,
            headers=headers,
            timeout=timeout,
            limits=httpx.Limits(max_keepalive_connections=0),
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> RouterClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ---- plumbing ----

    async def _request(self, method: str, path: str, **kw: Any) -> httpx.Response:
        try:
            resp = await self._http.request(method, path, **kw)
        except httpx.TimeoutException:
            raise RouterUnreachable(f"{method} {self.base_url}{path}: no answer (timed out)") from None
        except httpx.TransportError as e:
            raise RouterUnreachable(f"{method} {self.base_url}{path}: {_reason(e)}") from None
        if resp.status_code >= 400:
            raise _refusal(resp, method, path)
        return resp

    async def _json(self, method: str, path: str, **kw: Any) -> Any:
        resp = await self._request(method, path, **kw)
        try:
            return resp.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise BadAnswer(
                f"{method} {path}: the router answered {resp.status_code} with something that is not JSON: "
                f"{resp.text[:120]!r}"
            ) from None

    # ---- API ----

    async def health(self) -> bool:
        body = await self._json("GET", "/health")
        if not isinstance(body, dict) or body.get("status") != "ok":
            raise BadAnswer(f'GET /health: expected {{"status": "ok"}}, got {str(body)[:120]}')
        return True

    async def props(self) -> RouterProps:
        return parse_router_props(await self._json("GET", "/props"))

    async def models(self) -> list[ModelInfo]:
        return parse_models(await self._json("GET", "/models"))

    async def reload(self) -> list[ModelInfo]:
        """Re-read the preset (GET /models?reload=1); running models whose section changed are unloaded."""
        return parse_models(await self._json("GET", "/models", params={"reload": "1"}))

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
        """
        backoff = backoff or Backoff()
        while True:
            try:
                async for ev in self._sse_session(refresh_interval, backoff):
                    yield ev
                reason = "event stream closed by the router"
            except _NoSse:
                async for ev in self._poll_session(poll_interval, backoff):
                    yield ev
                reason = "polling stopped"
            except (RouterUnreachable, RouterRefused, BadAnswer) as e:
                reason = str(e)
            except (httpx.TransportError, httpx.StreamError) as e:
                reason = _reason(e)
            delay = backoff.next()
            yield StreamStateEvent(model="", state="disconnected", reason=reason, retry_in=delay)
            await asyncio.sleep(delay)

    async def _sse_session(self, refresh_interval: float, backoff: Backoff) -> AsyncIterator[RouterEvent]:
        queue: asyncio.Queue[str | BaseException | None] = asyncio.Queue()
        timeout = httpx.Timeout(10.0, read=None)
        try:
            cm = self._http.stream("GET", "/models/sse", timeout=timeout)
            resp = await cm.__aenter__()
        except httpx.TimeoutException:
            raise RouterUnreachable(f"GET {self.base_url}/models/sse: no answer (timed out)") from None
        except httpx.TransportError as e:
            raise RouterUnreachable(f"GET {self.base_url}/models/sse: {_reason(e)}") from None
        reader: asyncio.Task[None] | None = None
        try:
            if resp.status_code == 404:
                raise _NoSse()
            if resp.status_code >= 400:
                await resp.aread()
                raise _refusal(resp, "GET", "/models/sse")
            reader = asyncio.create_task(_read_sse(resp, queue))
            # The list is read after the stream is open, so no change can fall between the two.
            models = await self.models()
            backoff.reset()
            yield StreamStateEvent(model="", state="connected")
            yield ModelListEvent(model="*", models=tuple(models))
            while True:
                try:
                    item = await asyncio.wait_for(queue.get(), timeout=refresh_interval)
                except TimeoutError:
                    yield ModelListEvent(model="*", models=tuple(await self.models()))
                    continue
                if item is None:
                    return
                if isinstance(item, BaseException):
                    raise item
                ev = parse_event(item)
                yield ev
                if isinstance(ev, ModelsReloadEvent):
                    yield ModelListEvent(model="*", models=tuple(await self.models()))
        finally:
            if reader is not None:
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await reader
            with contextlib.suppress(Exception):
                await cm.__aexit__(None, None, None)

    async def _poll_session(self, poll_interval: float, backoff: Backoff) -> AsyncIterator[RouterEvent]:
        models = await self.models()
        backoff.reset()
        yield StreamStateEvent(model="", state="polling", reason="this router has no /models/sse; polling /models")
        yield ModelListEvent(model="*", models=tuple(models))
        while True:
            await asyncio.sleep(poll_interval)
            fresh = await self.models()
            if fresh != models:
                models = fresh
                yield ModelListEvent(model="*", models=tuple(models))


class _NoSse(Exception):
    """The router has no /models/sse (an older llama-server)."""


async def _read_sse(resp: httpx.Response, queue: asyncio.Queue[str | BaseException | None]) -> None:
    """Collect `data:` lines into events; a blank line ends one (several data lines join with \\n)."""
    data: list[str] = []
    try:
        async for line in resp.aiter_lines():
            if line.startswith("data:"):
                data.append(line[5:].lstrip(" "))
            elif line == "" and data:
                await queue.put("\n".join(data))
                data = []
        if data:
            await queue.put("\n".join(data))
        await queue.put(None)
    except (httpx.TransportError, httpx.StreamError) as e:
        await queue.put(RouterUnreachable(f"event stream lost: {_reason(e)}"))


def _refusal(resp: httpx.Response, method: str, path: str) -> RouterRefused:
    msg = error_message(resp.text)
    if resp.status_code == 401:
        return AuthRefused(401, f"API key refused ({msg})", method, path)
    return RouterRefused(resp.status_code, msg, method, path)


def _reason(e: BaseException) -> str:
    text = str(e) or type(e).__name__
    if "Connection refused" in text or "connect" in type(e).__name__.lower():
        return f"connection refused ({text})" if "refused" not in text else text
    return text
