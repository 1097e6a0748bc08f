"""Activity polling against a real router: real completions show tokens/s, polling never loads a model, a router
without --metrics says how to get figures, and `llamaherd top` reads a router it started (keyed, --metrics)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time

import httpx

from app.config import Config, MachineConfig, UiConfig
from app.services.activity.metrics import ModelActivity
from app.services.activity.poll import ActivityChanged, ActivityPoller, Target
from app.services.core.router_types import ModelState
from app.services.fleet import Fleet
from app.services.router.client import RouterClient
from tests.conftest import RouterFactory
from tests.helpers.herd import Herd
from tests.helpers.router import RouterProc
from tests.helpers.wait import wait_for


async def load(c: RouterClient, router: RouterProc, model: str) -> None:
    await c.load(model)
    await asyncio.to_thread(router.wait_model, model, {"loaded"})


async def completions(url: str, model: str, stop: asyncio.Event) -> int:
    """Real completions, one after another, until told to stop; how many finished."""
    done = 0
    # No keep-alive: the router closes the connection after a proxied answer, and a request sent on it then
    # failed with "Server disconnected without sending a response".
    async with httpx.AsyncClient(timeout=30, limits=httpx.Limits(max_keepalive_connections=0)) as http:
        while not stop.is_set():
            r = await http.post(f"{url}/completion", json={"model": model, "prompt": "once upon", "n_predict": 24})
            assert r.status_code == 200, r.text
            done += 1
    return done


async def poll_until(p: ActivityPoller, pred: object, timeout: float, every: float = 0.5) -> ModelActivity:
    """Poll every `every` s until a figure of the only model satisfies pred; its figures when it does."""
    seen: list[ModelActivity] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for ev in await p.poll():
            seen.extend(ev.models)
            for a in ev.models:
                if pred(a):  # type: ignore[operator]
                    return a
        await asyncio.sleep(every)
    raise AssertionError(f"no figure within {timeout} s satisfied the test; the last ones: {seen[-4:]}")


async def test_a_loop_of_completions_shows_tokens_per_second_and_then_zero(make_router: RouterFactory) -> None:
    router = make_router(extra_args=["--metrics"])
    async with RouterClient(router.url) as c:
        await load(c, router, "alpha")
        p = ActivityPoller(lambda: [Target("here", c, ("alpha",))])
        first = (await p.poll())[0].models[0]
        assert first.metrics and first.tokens_per_s is None and first.slots_total == 4  # one poll: no rate yet
        stop = asyncio.Event()
        loop = asyncio.create_task(completions(router.url, "alpha", stop))
        try:
            busy = await poll_until(p, lambda a: (a.tokens_per_s or 0) > 0, timeout=20)
            assert busy.prompt_tokens_per_s is not None and busy.prompt_tokens_per_s > 0
        finally:
            stop.set()
            assert await loop > 0
        idle = await poll_until(p, lambda a: a.tokens_per_s == 0 and a.requests_processing == 0, timeout=20)
        assert idle.slots_busy == 0 and idle.requests_deferred == 0
        assert any(v > 0 for v in idle.spark) and idle.spark[-1] == 0  # the sparkline holds the busy minute


async def status_changes(url: str, seen: list[tuple[str, str]]) -> None:
    """The router's /models/sse as (model, status), in the order it sends them, until cancelled."""
    async with httpx.AsyncClient(timeout=None) as http, http.stream("GET", f"{url}/models/sse") as stream:
        async for line in stream.aiter_lines():
            if line.startswith("data:"):
                ev = json.loads(line.removeprefix("data:"))
                seen.append((str(ev.get("model")), str(ev.get("data", {}).get("status"))))


async def test_polling_never_loads_a_model(make_router: RouterFactory) -> None:
    # room for every model: a failed model holds its place, so with one place the marker would refuse a load
    router = make_router(models_max=3, extra_args=["--metrics"])
    seen: list[tuple[str, str]] = []
    follow = asyncio.create_task(status_changes(router.url, seen))
    try:
        async with RouterClient(router.url) as c:
            # A load of `broken` fails at once: a marker in the router's ordered stream of status changes. The
            # first one shows the stream is followed before the polls begin.
            await c.load("broken")
            await wait_for(lambda: ("broken", "unloaded") in seen, 60, what="the first marker's failure on the stream")
            # A stale list says alpha is loaded; it is not. Poll it far more often than any dashboard would.
            p = ActivityPoller(lambda: [Target("here", c, ("alpha", "beta"))])
            for _ in range(40):
                for ev in await p.poll():
                    assert ev.models == ()  # "model is not loaded": no figures, no error
            # The second marker, asked after every poll was answered: a load a poll began is in the stream before it.
            polled = len(seen)
            await c.load("broken")
            await wait_for(lambda: ("broken", "loading") in seen[polled:], 60, what="the second marker on the stream")
            assert [m for m in seen if m[0] != "broken"] == [], seen
            states = {m.id: m.state for m in await c.models()}
            assert states["alpha"] is ModelState.UNLOADED and states["beta"] is ModelState.UNLOADED
    finally:
        follow.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await follow


async def test_a_router_without_metrics_shows_no_figures_and_says_how_to_get_them(make_router: RouterFactory) -> None:
    router = make_router()
    async with RouterClient(router.url) as c:
        await load(c, router, "alpha")
        p = ActivityPoller(lambda: [Target("here", c, ("alpha",))])
        for _ in range(2):
            (ev,) = await p.poll()
            (a,) = ev.models
            assert not a.metrics and a.tokens_per_s is None and a.slots_total is None
            assert ev.hint is not None and "--metrics" in ev.hint


def test_top_reads_a_router_llamaherd_started(herd: Herd) -> None:
    r = herd.run("top", "--once")  # no router yet: said, and nothing else is wrong
    assert r.returncode == 0 and "(no loaded model)" in r.stdout and "llamaherd start here" in r.stdout, r
    assert herd.run("start", "here").returncode == 0
    r = herd.run("load", "here", "alpha", "--wait")
    assert r.returncode == 0, r.stderr
    rec = herd.record()
    assert rec is not None and "--metrics" in rec["argv"]  # type: ignore[operator]
    r = herd.run("top", "here", "--once", "--json")
    assert r.returncode == 0, r.stderr
    (line,) = r.stdout.splitlines()
    doc = json.loads(line)
    (m,) = doc["models"]
    assert m["machine"] == "here" and m["model"] == "alpha" and m["metrics"] is True
    assert m["tokens_per_s"] == 0 and m["requests_processing"] == 0 and m["slots_busy"] == 0
    assert m["slots_total"] == 4 and m["requests_deferred"] == 0
    assert doc["machines"] == [{"machine": "here", "problem": None, "hint": None, "not_answering": []}]
    r = herd.run("top", "--once")
    assert r.returncode == 0, r.stderr
    head, row = r.stdout.splitlines()[:2]
    assert head.split() == ["MACHINE", "MODEL", "TOK/S", "PROMPT/S", "REQS", "QUEUED", "SLOTS"]
    assert row.split() == ["here", "alpha", "0.0", "0.0", "0", "0", "0/4"]
    with contextlib.suppress(Exception):
        herd.run("stop", "here")


async def test_the_fleet_polls_what_is_loaded_and_says_when_nothing_is(make_router: RouterFactory) -> None:
    router = make_router(extra_args=["--metrics"])
    cfg = Config(machines=(MachineConfig(name="box", url=router.url),), ui=UiConfig(activity_every=0.5))
    fleet = Fleet(cfg)
    q = fleet.subscribe()
    await fleet.start()
    try:

        async def next_activity(pred: object) -> ActivityChanged:
            async with asyncio.timeout(30):
                while True:
                    ev = await q.get()
                    if isinstance(ev, ActivityChanged) and pred(ev):  # type: ignore[operator]
                        return ev

        await wait_for(lambda: fleet.view("box").stream == "sse", 30, what="the stream connected")
        await fleet.load("box", "alpha")
        ev = await next_activity(lambda e: e.models and e.models[0].tokens_per_s is not None)
        (a,) = ev.models
        assert (a.machine, a.model, a.metrics, a.slots_total, a.tokens_per_s) == ("box", "alpha", True, 4, 0.0)
        fleet.watch_activity(["elsewhere"])  # box is not on screen: its figures go, and it is not asked
        await next_activity(lambda e: not e.models)
        fleet.watch_activity(None)
        await next_activity(lambda e: e.models and e.models[0].model == "alpha")
        await fleet.unload("box", "alpha")
        assert (await next_activity(lambda e: not e.models)).machine == "box"  # its figures are withdrawn
    finally:
        await fleet.close()
