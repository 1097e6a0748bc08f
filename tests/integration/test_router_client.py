"""RouterClient and its event stream against a real llama-server router."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncGenerator

import pytest

from app.cli.output import EventLines
from app.services.core.errors import AuthRefused, ModelFailed, RouterRefused, RouterUnreachable
from app.services.core.router_types import (
    ModelListEvent,
    ModelState,
    ModelStatusEvent,
    RouterEvent,
    StreamState,
    StreamStateEvent,
)
from app.services.router.client import RouterClient
from app.services.router.event_stream import router_events
from app.services.router.load_and_wait import ensure_loaded
from tests.conftest import RouterFactory
from tests.helpers.router import RouterProc


async def next_matching(events: AsyncGenerator[RouterEvent, None], pred: object, timeout: float = 30) -> RouterEvent:
    async with asyncio.timeout(timeout):
        async for ev in events:
            if pred(ev):  # type: ignore[operator]
                return ev
    raise AssertionError("stream ended")


async def test_models_lists_every_preset_section(router: RouterProc) -> None:
    async with RouterClient(router.url) as c:
        assert await c.health()
        models = {m.id: m for m in await c.models()}
        props = await c.props()
    assert set(models) == {"alpha", "beta", "broken"}
    assert all(m.state is ModelState.UNLOADED for m in models.values())
    assert "model = " in models["alpha"].preset and models["alpha"].source == "preset"
    assert props.role == "router" and props.max_instances == 1 and props.build_info.startswith("b")


async def test_load_shows_progress_then_loaded_with_meta_then_unload(router: RouterProc) -> None:
    async with RouterClient(router.url) as c:
        events = router_events(c)
        first = await next_matching(events, lambda e: isinstance(e, ModelListEvent))
        assert isinstance(first, ModelListEvent)
        assert await c.load("alpha") is True
        seen: list[ModelStatusEvent] = []
        async with asyncio.timeout(30):
            async for ev in events:
                if isinstance(ev, ModelStatusEvent) and ev.model == "alpha":
                    seen.append(ev)
                    if ev.status is ModelState.LOADED:
                        break
        assert seen[0].kind == "model_status" and seen[0].status is ModelState.LOADING
        progress = [e for e in seen if e.progress is not None]
        assert progress and all(e.status is ModelState.LOADING for e in progress)
        assert seen[-1].info is not None and seen[-1].info["meta"]["n_ctx"] == 256
        # loading the same model again is not an error
        assert await c.load("alpha") is False
        loaded = {m.id: m for m in await c.models()}["alpha"]
        assert loaded.state is ModelState.LOADED and loaded.n_params and loaded.size and loaded.port
        props = await c.model_props("alpha")
        assert props.vision is False and props.total_slots is not None
        await c.unload("alpha")
        ev = await next_matching(
            events, lambda e: isinstance(e, ModelStatusEvent) and e.model == "alpha" and e.status is ModelState.UNLOADED
        )
        assert isinstance(ev, ModelStatusEvent) and ev.exit_code == 0
        await events.aclose()


async def test_models_max_one_evicts_the_first(router: RouterProc) -> None:
    async with RouterClient(router.url) as c:
        await ensure_loaded(c, "alpha", timeout=30)
        events = router_events(c)
        await next_matching(events, lambda e: isinstance(e, ModelListEvent))
        await c.load("beta")
        changes: list[tuple[str, ModelState]] = []
        async with asyncio.timeout(30):
            async for ev in events:
                if isinstance(ev, ModelStatusEvent):
                    changes.append((ev.model, ev.status))
                    if (ev.model, ev.status) == ("beta", ModelState.LOADED):
                        break
        await events.aclose()
        assert ("alpha", ModelState.UNLOADED) in changes
        assert changes.index(("alpha", ModelState.UNLOADED)) < changes.index(("beta", ModelState.LOADED))
        states = {m.id: m.state for m in await c.models()}
    assert states["alpha"] is ModelState.UNLOADED and states["beta"] is ModelState.LOADED


@pytest.mark.timing
async def test_corrupt_model_fails_fast_with_exit_code(router: RouterProc) -> None:
    async with RouterClient(router.url) as c:
        t0 = time.monotonic()
        with pytest.raises(ModelFailed) as e:
            await ensure_loaded(c, "broken", timeout=60)
        took = time.monotonic() - t0
        assert took < 5, took
        assert e.value.exit_code not in (None, 0) and "broken failed to load" in str(e.value)
        (m,) = [m for m in await c.models() if m.id == "broken"]
        assert m.state is ModelState.FAILED and m.failed


async def test_unknown_model_is_refused_with_the_routers_words(router: RouterProc) -> None:
    async with RouterClient(router.url) as c:
        with pytest.raises(RouterRefused) as e:
            await c.load("nope")
    assert e.value.status == 404 and "no model named 'nope'" in e.value.message


async def test_api_key(make_router: RouterFactory) -> None:
    r = make_router(extra_args=["--api-key", "k3y"], env={"TEST_ROUTER_KEY": "k3y"})
    async with RouterClient(r.url) as c:
        with pytest.raises(AuthRefused) as e:
            await c.models()
        assert "API key refused" in str(e.value)
    async with RouterClient(r.url, api_key="k3y") as c:
        assert {m.id for m in await c.models()} == {"alpha", "beta", "broken"}
        events = router_events(c)
        ev = await next_matching(events, lambda e: isinstance(e, StreamStateEvent))
        assert isinstance(ev, StreamStateEvent) and ev.state == StreamState.CONNECTED
        await events.aclose()


async def test_unreachable_is_typed() -> None:
    from tests.helpers.router import free_port

    async with RouterClient(f"http://127.0.0.1:{free_port()}") as c:
        with pytest.raises(RouterUnreachable):
            await c.health()


async def test_events_survive_a_router_restart_on_the_same_port(router: RouterProc) -> None:
    async with RouterClient(router.url) as c:
        events = router_events(c)
        await next_matching(events, lambda e: isinstance(e, ModelListEvent))
        router.stop()
        down = await next_matching(
            events, lambda e: isinstance(e, StreamStateEvent) and e.state == StreamState.DISCONNECTED
        )
        assert isinstance(down, StreamStateEvent) and down.retry_in is not None
        router.start()
        await next_matching(events, lambda e: isinstance(e, StreamStateEvent) and e.state == StreamState.CONNECTED)
        await next_matching(events, lambda e: isinstance(e, ModelListEvent))
        await c.load("alpha")
        ev = await next_matching(
            events, lambda e: isinstance(e, ModelStatusEvent) and e.model == "alpha" and e.status is ModelState.LOADED
        )
        assert ev.model == "alpha"
        await events.aclose()


async def test_events_lines_skip_re_reads_that_say_nothing_new(router: RouterProc) -> None:
    """`llamaherd events` through the real stream, its silence re-read every 0.3 s instead of 30 s."""
    lines = EventLines()
    printed: list[str] = []
    async with RouterClient(router.url) as c:

        async def follow() -> None:
            async for ev in router_events(c, refresh_interval=0.3):
                text = lines.line(ev)
                if text is not None:
                    printed.append(json.loads(text)["event"])

        task = asyncio.create_task(follow())
        try:
            await asyncio.sleep(1.5)  # five re-reads of an unchanged list
            assert printed == ["stream_state", "models"]
            assert await c.load("alpha") is True
            async with asyncio.timeout(30):
                while not any(m.id == "alpha" and m.state is ModelState.LOADED for m in await c.models()):
                    await asyncio.sleep(0.1)
                # A re-read between the load and the stream's word of it does say something new (alpha loading,
                # or loaded) and is printed; once the printed lines say alpha is loaded, a re-read has nothing new.
                while (lines.known or {}).get("alpha") != "loaded":
                    await asyncio.sleep(0.05)
            settled = len(printed)
            await asyncio.sleep(1.5)  # five more re-reads, now of the list with alpha loaded
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    assert printed[:2] == ["stream_state", "models"], printed
    assert "models" not in printed[settled:], printed
    assert printed.count("status_change") >= 1  # the load itself was printed
