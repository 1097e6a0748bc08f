"""The hub through the Fleet (what the dashboard holds): two pulls at once with progress, the downloading row in
the Fleet's model list and its progress events, cancel by name, a failure as a Problem and a history row, rm."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable

import pytest

from app.config import load_config
from app.services.core.fleet_events import FleetEvent, ModelEvent, Problem
from app.services.core.router_types import DownloadProgressEvent, ModelState, RouterState
from app.services.fleet import Fleet
from app.services.history.store import HistoryStore
from app.services.hub.progress import PullProgress
from app.services.router.client import RouterClient
from tests.helpers.herd import Herd, local_config
from tests.helpers.hub_standin import TINY_REPO, HubStandin
from tests.helpers.wait import wait_for

Q4, Q8 = f"{TINY_REPO}:Q4_K_M", f"{TINY_REPO}:Q8_0"


@pytest.fixture
async def fleet(herd: Herd, hub: HubStandin, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Fleet]:
    monkeypatch.setenv("XDG_STATE_HOME", str(herd.state_home))
    herd.write_config(local_config("here", herd.root / "models.ini", hub=hub.url, hub_cache=str(herd.root / "cache")))
    assert herd.run("start", "here").returncode == 0
    f = Fleet(load_config(herd.config))
    f.history = HistoryStore()
    f.asked_by = "the test"
    await f.start()
    await wait_for(lambda: f.view("here").router_state is RouterState.RUNNING, 15, what="router seen")
    try:
        yield f
    finally:
        await f.close()
        f.history.close()


async def test_two_pulls_at_once_with_progress_then_rm(
    fleet: Fleet, hub: HubStandin, herd: Herd, monkeypatch: pytest.MonkeyPatch
) -> None:
    hub.rate = 300_000.0  # each ~451 KB file takes ~1.5 s: both are under way together
    asked: list[tuple[str, float]] = []
    download = RouterClient.download

    async def recorded(client: RouterClient, name: str) -> None:
        asked.append((name, time.monotonic()))
        await download(client, name)

    monkeypatch.setattr(RouterClient, "download", recorded)
    q = fleet.subscribe()
    seen: dict[str, list[PullProgress]] = {Q4: [], Q8: []}
    first_progress: dict[str, float] = {}

    def noted(name: str) -> Callable[[PullProgress], None]:
        def note(p: PullProgress) -> None:
            first_progress.setdefault(name, time.monotonic())
            seen[name].append(p)

        return note

    one = asyncio.create_task(fleet.pull("here", Q4, on_progress=noted(Q4)))
    two = asyncio.create_task(fleet.pull("here", Q8, on_progress=noted(Q8)))
    await wait_for(lambda: len(fleet.pulls.running()) == 2, 10, what="two pulls under way")
    await wait_for(
        lambda: any(m.state is ModelState.DOWNLOADING for m in fleet.models("here")), 10, what="a downloading row"
    )
    a, b = await asyncio.gather(one, two)
    assert a.ok and b.ok, (a, b)
    # One repo: the second was asked of the router once the first was transferring (pulls.py: their children raced
    # on the cache's refs/main when both resolved the repo at once).
    (first, _), (_, second_at) = asked
    assert second_at >= first_progress[first], (asked, first_progress)
    for name, progress in seen.items():
        assert progress and progress[-1].done == progress[-1].total > 0, name
        assert any(p.rate for p in progress), name
    events: list[FleetEvent] = []
    while not q.empty():
        events.append(q.get_nowait())
    fleet.unsubscribe(q)
    dl = [e for e in events if isinstance(e, ModelEvent) and isinstance(e.event, DownloadProgressEvent)]
    assert {e.event.model for e in dl} == {Q4, Q8}
    await wait_for(lambda: {Q4, Q8} <= {m.id for m in fleet.models("here")}, 10, what="both in the list")
    done = await fleet.remove_model("here", Q4)
    assert done.ok and len(done.removed_files) == 1
    assert fleet.history is not None
    reasons = [(r.model, r.reason) for r in await fleet.history.query(machine="here")]
    assert (Q4, "pulled") in reasons and (Q8, "pulled") in reasons and (Q4, "removed") in reasons


async def test_cancel_by_name_is_no_problem_a_failure_is(fleet: Fleet, hub: HubStandin) -> None:
    hub.rate = 40_000.0
    q = fleet.subscribe()
    task = asyncio.create_task(fleet.pull("here", Q4))
    await wait_for(lambda: (p := fleet.pulls.progress("here", Q4)) is not None and p.done > 0, 15, what="progress")
    row = next(m for m in fleet.models("here") if m.id == Q4)
    assert row.state is ModelState.DOWNLOADING and row.download is not None and row.download.done > 0
    await fleet.unload("here", Q4)  # `u` on the downloading row
    outcome = await task
    assert not outcome.ok and outcome.cancelled and outcome.cause.startswith("cancelled on request")
    hub.rate = None
    failed = await fleet.pull("here", f"{TINY_REPO}:Q5_K_S")
    assert not failed.ok and "has no Q5_K_S file" in failed.cause
    problems = []
    while not q.empty():
        ev = q.get_nowait()
        if isinstance(ev, Problem):
            problems.append(ev)
    fleet.unsubscribe(q)
    assert [p.message for p in problems] == [f"pull {TINY_REPO}:Q5_K_S on here: {failed.cause}"]


async def test_pulls_on_two_machines_at_once(herd: Herd, hub: HubStandin, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(herd.state_home))
    preset = herd.root / "models.ini"
    herd.write_config(
        local_config("one", preset, router="one", hub=hub.url, hub_cache=str(herd.root / "cache-one"))
        + local_config("two", preset, router="two", hub=hub.url, hub_cache=str(herd.root / "cache-two"))
    )
    assert herd.run("start", "one").returncode == 0 and herd.run("start", "two").returncode == 0
    hub.rate = 300_000.0
    f = Fleet(load_config(herd.config))
    await f.start()
    try:
        await wait_for(lambda: all(f.view(n).router_state is RouterState.RUNNING for n in ("one", "two")), 15)
        a = asyncio.create_task(f.pull("one", Q4))
        b = asyncio.create_task(f.pull("two", Q8))
        await wait_for(lambda: sorted(f.pulls.running()) == [("one", Q4), ("two", Q8)], 10, what="both under way")
        done = await asyncio.gather(a, b)
    finally:
        await f.close()
    assert [o.ok for o in done] == [True, True], done
    assert [p.name for p in (herd.root / "cache-one").rglob("*.gguf")] == ["tiny-Q4_K_M.gguf"]
    assert [p.name for p in (herd.root / "cache-two").rglob("*.gguf")] == ["tiny-Q8_0.gguf"]
