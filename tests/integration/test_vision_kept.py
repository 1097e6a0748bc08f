"""What a model said of pictures while it ran is kept after it unloads, folded from a real router's answers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

from app.services.core.router_types import ModelInfo, ModelListEvent, ModelState, ModelStatusEvent, RouterEvent
from app.services.router.client import RouterClient
from app.services.router.event_stream import router_events
from app.services.router.model_fold import fold_list, fold_status
from app.ui.text.format import vision
from tests.helpers.router import RouterProc


async def fold_until(
    events: AsyncGenerator[RouterEvent, None], known: dict[str, ModelInfo], model: str, state: ModelState
) -> dict[str, ModelInfo]:
    """Fold the stream as the machine does until `model` reaches `state`."""
    async with asyncio.timeout(30):
        async for ev in events:
            if isinstance(ev, ModelListEvent):
                known = fold_list(known, ev.models)
            elif isinstance(ev, ModelStatusEvent):
                known[ev.model] = fold_status(known[ev.model], ev)
            if model in known and known[model].state is state:
                return known
    raise AssertionError("stream ended")


async def test_vision_no_is_kept_after_unload(router: RouterProc) -> None:
    async with RouterClient(router.url) as c:
        events = router_events(c)
        known = await fold_until(events, {}, "alpha", ModelState.UNLOADED)
        assert vision(known["alpha"])[0] == "?"  # never ran: it has not said

        await c.load("alpha")
        known = await fold_until(events, known, "alpha", ModelState.LOADED)
        assert vision(known["alpha"])[0] == "no"
        known = fold_list(known, await c.models())  # the periodic re-read while it runs
        assert vision(known["alpha"])[0] == "no" and known["alpha"].n_ctx == 256

        await c.unload("alpha")
        known = await fold_until(events, known, "alpha", ModelState.UNLOADED)
        known = fold_list(known, await c.models())  # the re-read after unload: arrays kept, meta dropped
        alpha = known["alpha"]
        assert alpha.state is ModelState.UNLOADED and alpha.n_ctx == 256
        assert vision(alpha)[0] == "no"
        assert vision(known["beta"])[0] == "?"  # the other model still has not said
        await events.aclose()
