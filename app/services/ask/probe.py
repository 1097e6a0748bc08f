"""The probe: a one-token completion to a loaded model, answered within a bound or not. It tells a model that
answers from one the router lists as `loaded` whose child no longer does (a wedged child; a stopped process looks
the same: the router's /models and /health answer, everything proxied to the child hangs without a byte).

Never sent to a model that is not running (it would load it: `?autoload=false` makes the router refuse instead),
and to a sleeping one only when named (it would wake it). A probe is inference: it resets the child's idle timer
like any request, so whoever probes on a timer must leave models that sleep when idle alone.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import httpx

from app.services.ask.answer import chat_path
from app.services.ask.vision import is_projector
from app.services.core.bounded import read_capped
from app.services.core.errors import HerdError, RouterNotAnswering, RouterRefused
from app.services.core.router_types import ModelInfo, ModelState
from app.services.router.client import RouterClient

# A one-token answer from a loaded model on a CPU is tens of milliseconds after a prompt of a few tokens; a model
# whose slots are all busy queues the probe behind them. Plus the link's round trips (RouterClient.bound).
PROBE_WITHIN = 10.0
PROBE_LIMIT = 256 * 1024
_BODY = {"messages": [{"role": "user", "content": "ping"}], "max_tokens": 1, "stream": False}


@dataclass(frozen=True)
class ProbeResult:
    model: str
    answering: bool
    ms: float | None
    """How long the answer took (None when there was none)."""
    reason: str = ""
    """Why not answering, or why not probed, in words."""
    probed: bool = True

    def as_json(self) -> dict[str, object]:
        return {"model": self.model, "answering": self.answering, "ms": self.ms, "reason": self.reason,
                "probed": self.probed}  # fmt: skip


async def probe(
    client: RouterClient, model: str, within: float = PROBE_WITHIN, clock: Callable[[], float] = time.monotonic
) -> ProbeResult:
    body = json.dumps({"model": model, **_BODY}).encode()
    bound = client.bound(within)
    t0 = clock()
    try:
        async with asyncio.timeout(bound):
            cm, resp = await client.post_stream(chat_path(), body, headers_within=within)
            try:
                raw = await read_capped(resp, PROBE_LIMIT, f"{client.name}: probe {model}")
            finally:
                await cm.__aexit__(None, None, None)
    except TimeoutError:
        return ProbeResult(model, False, None, f"not answering: no answer within {bound:g} s")
    except RouterRefused as e:
        if e.status == 400 and "not loaded" in e.message:
            return ProbeResult(model, False, None, "not loaded (a probe would load it: not sent)", probed=False)
        return ProbeResult(model, False, None, f"refused: {e.status} {e.message}")
    except RouterNotAnswering:
        return ProbeResult(model, False, None, f"not answering: no answer within {bound:g} s")
    except (HerdError, httpx.HTTPError) as e:
        return ProbeResult(model, False, None, str(e) or type(e).__name__)
    ms = (clock() - t0) * 1000
    try:
        answer = json.loads(raw)
        ok = isinstance(answer, dict) and isinstance(answer.get("choices"), list)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        ok = False
    if not ok:
        return ProbeResult(model, False, ms, "answered, but not with a completion")
    return ProbeResult(model, True, round(ms, 1))


def probe_targets(models: Sequence[ModelInfo], named: str | None) -> tuple[list[str], list[ProbeResult]]:
    """(models to probe, the rest with why not). Unnamed: every loaded model (sleeping ones are left asleep).
    Named: that model if it runs (sleeping: woken, as asked); otherwise why not."""
    skipped: list[ProbeResult] = []
    if named is not None:
        m = next((m for m in models if m.id == named or named in m.aliases), None)
        if m is None:
            return [], [ProbeResult(named, False, None, "no model of that name here", probed=False)]
        if m.state in (ModelState.LOADED, ModelState.SLEEPING):
            return [m.id], []
        why = f"{m.state.value}: not probed (a probe would load it)"
        return [], [ProbeResult(m.id, False, None, why, probed=False)]
    targets: list[str] = []
    for m in models:
        if m.state is ModelState.LOADED and not is_projector(m.id):
            targets.append(m.id)
        elif m.state is ModelState.SLEEPING:
            skipped.append(ProbeResult(m.id, True, None, "sleeping: not probed (it would wake)", probed=False))
    return targets, skipped


async def probe_router(client: RouterClient, named: str | None = None) -> list[ProbeResult]:
    """Probe a router's loaded models at once (or the one named); sleeping and unloaded ones are listed, unasked."""
    targets, skipped = probe_targets(await client.models(), named)
    done = await asyncio.gather(*(probe(client, m) for m in targets))
    return [*done, *skipped]
