"""A router's live event stream, over its RouterClient: `/models/sse` read into typed events, the full list
(`GET /models`) at every connect and after silence, `/health` asked in the silences (by router/health_beat.py, one
timer for every router), and polling `/models` where the stream does not exist. Apart from the client's REST calls,
which it uses: `router_events(client)` is its way in.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable

import httpx

from app.services.core.backoff import Backoff
from app.services.core.bounded import read_head, sse_payloads
from app.services.core.connect_cause import connect_failure
from app.services.core.errors import BadAnswer, RouterNotAnswering, RouterRefused, RouterUnreachable
from app.services.core.router_types import (
    ModelInfo,
    ModelListEvent,
    ModelsReloadEvent,
    RouterEvent,
    StreamState,
    StreamStateEvent,
)
from app.services.core.waits import within
from app.services.router.client import RouterClient, refused, transport_reason
from app.services.router.health_beat import HEALTH_EVERY, answers, beat
from app.services.router.http1 import open_stream
from app.services.router.parse import parse_event

# Liveness: the stream has no keep-alives, so after HEALTH_EVERY of silence /health is asked (router/health_beat.py;
# a router that does not answer it within HEALTH_BOUND is "not answering": a SIGSTOPped router accepts connections
# and says nothing).
# A stream that sends no headers within this is reported, not waited on forever.
HEADERS_TIMEOUT = 4.0
SSE_PATH = "/models/sse"


# The SSE stream has no keep-alives, so silence is normal; the full list is re-read this often while idle.
REFRESH_INTERVAL = 30.0
POLL_INTERVAL = 2.0


async def router_events(
    client: RouterClient,
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
            async with contextlib.aclosing(_sse_session(client, refresh_interval, backoff)) as session:
                async for ev in session:
                    yield ev
            reason = "event stream closed by the router"
        except _NoSse:
            try:
                async with contextlib.aclosing(_poll_session(client, poll_interval, backoff)) as polls:
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
            reason = transport_reason(e)
        delay = backoff.next()
        yield StreamStateEvent(model="", state=state, reason=reason, retry_in=delay)
        await asyncio.sleep(delay)


async def _sse_session(
    client: RouterClient, refresh_interval: float, backoff: Backoff
) -> AsyncGenerator[RouterEvent, None]:
    # Bounded: a router flooding events waits for us instead of filling memory.
    queue: asyncio.Queue[str | BaseException | _Wake | None] = asyncio.Queue(maxsize=256)
    body, close = await _open_events(client)
    reader: asyncio.Task[None] | None = None
    watch = None
    try:
        reader = asyncio.create_task(_read_sse(body, queue, f"{client.name}: GET {SSE_PATH}"))
        # The list is read after the stream is open, so no change can fall between the two.
        models = await _watched_models(client)
        yield StreamStateEvent(model="", state=StreamState.CONNECTED)
        yield ModelListEvent(model="*", models=tuple(models))
        # The backoff is reset by the first event or answered /health, not by the connect: a router that
        # connects and then sends garbage (a line without end) is retried ever more slowly, not every 0.5 s.
        loop = asyncio.get_running_loop()
        heard = loop.time()  # the last time the router said anything

        def wake() -> None:  # a full queue is read at once anyway, and `watch.pending` is looked at first
            if not queue.full():
                queue.put_nowait(_WAKE)

        watch = beat().watch(client, wake)
        answering = True
        while True:
            if watch.pending:  # the beat's word on /health: a change, or its first answer
                watch.pending = False
                if watch.take_answered():
                    backoff.reset()
                if watch.alive != answering:
                    answering = watch.alive
                    if not answering:
                        yield StreamStateEvent(model="", state=StreamState.NOT_ANSWERING, reason=watch.why)
                        continue
                    yield StreamStateEvent(model="", state=StreamState.CONNECTED)
                    heard = 0.0  # what changed while it was silent is only in the list
            if answering and loop.time() - heard >= refresh_interval:
                yield ModelListEvent(model="*", models=tuple(await _watched_models(client)))
                heard = loop.time()
            try:
                # Not asyncio.wait_for: on 3.11 it loses a cancel that meets an arriving event (core/waits.py).
                # Not answering: the beat's next word is awaited; answering: at most until the list is due.
                due = max(0.0, heard + refresh_interval - loop.time()) if answering else None
                item = await within(queue.get(), due)
            except TimeoutError:
                continue
            if isinstance(item, _Wake):
                continue
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            heard = loop.time()
            watch.heard()
            backoff.reset()
            if not answering:
                answering = True
                yield StreamStateEvent(model="", state=StreamState.CONNECTED)
            ev = parse_event(item)
            yield ev
            if isinstance(ev, ModelsReloadEvent):
                yield ModelListEvent(model="*", models=tuple(await _watched_models(client)))
    finally:
        if watch is not None:
            watch.close()
        if reader is not None:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reader
        await close()


async def _open_events(client: RouterClient) -> tuple[AsyncIterator[bytes], Callable[[], Awaitable[None]]]:
    """The event stream's body as it comes, and how to close it; _NoSse where the router has none, the router's
    refusal for any other 4xx/5xx. A plain `http://host:port` router (every one llamaherd reaches) is read on
    asyncio streams (router/http1.py: httpx's layers were most of a pull's stream-reading CPU), any other URL
    through httpx."""
    address = client.plain_address
    if address is not None:
        where = f"{client.name}: GET {SSE_PATH}"
        stream = await open_stream(*address, SSE_PATH, client.headers, client.bound(HEADERS_TIMEOUT), where)
        status, body = stream.status, stream.pieces()

        async def error_text() -> str:
            return await stream.error_text(client.bound(HEADERS_TIMEOUT))

        async def close() -> None:
            stream.close()

    else:
        cm, resp = await client.open_stream(SSE_PATH, HEADERS_TIMEOUT)
        status, body = resp.status_code, resp.aiter_bytes()

        async def error_text() -> str:
            return await read_head(resp)

        async def close() -> None:
            with contextlib.suppress(Exception):
                await cm.__aexit__(None, None, None)

    try:
        if status == 404:
            raise _NoSse()
        if status >= 400:
            raise refused(status, await error_text(), "GET", SSE_PATH)
    except BaseException:
        await close()
        raise
    return body, close


async def _watched_models(client: RouterClient) -> list[ModelInfo]:
    """GET /models, with /health asked beside it while it takes long: a router that stops answering in the
    middle is reported within HEALTH_EVERY + HEALTH_BOUND, not after the whole request timeout (a big list
    over a slow link may take long and still be fine, as long as /health answers)."""
    task = asyncio.ensure_future(client.models())
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=HEALTH_EVERY)
            if done:
                return task.result()
            alive, why = await answers(client)
            if not alive and not task.done():
                raise RouterNotAnswering(why)
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


async def _poll_session(
    client: RouterClient, poll_interval: float, backoff: Backoff
) -> AsyncGenerator[RouterEvent, None]:
    models = await _watched_models(client)
    backoff.reset()
    yield StreamStateEvent(
        model="", state=StreamState.POLLING, reason="this router has no /models/sse; polling /models"
    )
    yield ModelListEvent(model="*", models=tuple(models))
    while True:
        await asyncio.sleep(poll_interval)
        fresh = await _watched_models(client)
        if fresh != models:
            models = fresh
            yield ModelListEvent(model="*", models=tuple(models))


class _NoSse(Exception):
    """The router has no /models/sse (an older llama-server)."""


class _Wake:
    """Put in a session's queue by the health beat: look at `watch.pending`."""


_WAKE = _Wake()


async def _read_sse(
    body: AsyncIterator[bytes], queue: asyncio.Queue[str | BaseException | _Wake | None], what: str
) -> None:
    """Collect `data:` lines into events; a blank line ends one (several data lines join with \\n)."""
    try:
        async for payload in sse_payloads(body, what):
            await queue.put(payload)
        await queue.put(None)
    except (httpx.TransportError, httpx.StreamError) as e:
        await queue.put(RouterUnreachable(f"event stream lost: {transport_reason(e)}"))
    except (OSError, asyncio.IncompleteReadError) as e:  # the plain path's (router/http1.py)
        await queue.put(RouterUnreachable(f"event stream lost: {connect_failure(e)}"))
    except BadAnswer as e:
        await queue.put(e)
