"""Load a model and wait until it is in memory, or fail fast with the reason.

Judged by what is in memory (the event stream and the list), not by the answer to the load request: somebody
else may have asked in the meantime, and a model that cannot load answers `success` and then exits.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Awaitable, Callable

from app.services.core.errors import ModelFailed, RouterError, RouterNotAnswering
from app.services.core.router_types import (
    ModelInfo,
    ModelListEvent,
    ModelState,
    ModelStatusEvent,
    RouterEvent,
    StreamState,
    StreamStateEvent,
)
from app.services.router.client import RouterClient
from app.services.router.event_stream import router_events

LOAD_TIMEOUT = 300.0  # only for a model that never answers; a failing one is reported as soon as it exits

LogTail = Callable[[str], Awaitable[list[str]]]


async def ensure_loaded(
    client: RouterClient, model: str, *, timeout: float = LOAD_TIMEOUT, log_tail: LogTail | None = None
) -> ModelInfo | None:
    """Skip when loaded, ask, wait. Raises ModelFailed (with the model's log lines when `log_tail` is given)."""
    events = router_events(client)
    try:
        async with asyncio.timeout(timeout):
            current = await _first_list(events)
            found = next((m for m in current if m.id == model or model in m.aliases), None)
            if found is not None and found.state in (ModelState.LOADED, ModelState.SLEEPING):
                return found
            canonical = found.id if found else model
            if found is None or found.state is not ModelState.LOADING:
                await client.load(model)  # an unknown model is refused here with the router's 404
            seen_loading = found is not None and found.state is ModelState.LOADING
            async for ev in events:
                state: ModelState | None = None
                exit_code: int | None = None
                if isinstance(ev, ModelStatusEvent) and ev.model == canonical:
                    state, exit_code = ev.status, ev.exit_code
                elif isinstance(ev, ModelListEvent):
                    m = next((m for m in ev.models if m.id == canonical), None)
                    if m is not None:
                        state, exit_code = m.state, m.exit_code
                elif isinstance(ev, StreamStateEvent) and ev.state == StreamState.NOT_ANSWERING:
                    raise RouterNotAnswering(f"{ev.reason}, while {canonical} was loading")
                elif isinstance(ev, StreamStateEvent) and ev.state == StreamState.DISCONNECTED:
                    raise RouterError(f"lost the router while {canonical} was loading: {ev.reason}")
                if state is None:
                    continue
                if state in (ModelState.LOADED, ModelState.SLEEPING):
                    return next((m for m in await client.models() if m.id == canonical), None)
                if state is ModelState.LOADING:
                    seen_loading = True
                elif state is ModelState.FAILED or (state is ModelState.UNLOADED and seen_loading):
                    tail = await log_tail(canonical) if log_tail else []
                    raise ModelFailed(canonical, exit_code, tail)
    except TimeoutError:
        raise RouterError(f"{model} did not finish loading within {timeout:.0f} s") from None
    finally:
        with contextlib.suppress(Exception):
            await events.aclose()
    raise RouterError("the event stream ended")


async def _first_list(events: AsyncGenerator[RouterEvent, None]) -> tuple[ModelInfo, ...]:
    async for ev in events:
        if isinstance(ev, ModelListEvent):
            return ev.models
        if isinstance(ev, StreamStateEvent) and ev.state == StreamState.NOT_ANSWERING:
            raise RouterNotAnswering(ev.reason)
        if isinstance(ev, StreamStateEvent) and ev.state == StreamState.DISCONNECTED:
            raise RouterError(ev.reason)
    raise RouterError("the event stream ended")
