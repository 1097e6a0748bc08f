"""Polling the activity of loaded models through their router: one round every `every` seconds, every machine at
once, and nothing asked of a model that is not loaded.

Per loaded model and round: GET /metrics?model=ID&autoload=false (the router's idle timer ignores it); the slot
count once per load from /props (also ignored by the idle timer); GET /slots only while the model has requests in
flight, because a /slots request counts as activity and, asked every 2 s, kept a child from ever sleeping.
`autoload=false` everywhere: a model that went away answers 400 and is never loaded by a poll.

A model that served nothing since its previous poll (idle) is asked every IDLE_ROUNDS rounds only, and shows its
last figures (all zero) in between; a busy one is asked every round (2 s). The cost of a poll is its TCP connection
(the router closes every proxied answer's connection): connect, send and close on loopback were ~90 % of the CPU a
poll cost (cProfile), so fewer requests is what makes it cheaper.

The same /metrics answers tell a loaded model whose child stopped answering (activity/answering.py): no request of
its own, and none that resets the child's idle timer. Such a model is asked every round until it answers again.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from app.services.activity.answering import AnsweringWatch
from app.services.activity.metrics import (
    METRICS_LIMIT,
    NO_METRICS_HINT,
    SLOTS_LIMIT,
    ModelActivity,
    Rates,
    no_metrics,
    parse_metrics,
    parse_slots,
    sample_of,
)
from app.services.core.errors import HerdError, RouterNotAnswering, RouterRefused
from app.services.core.fleet_events import AnsweringChanged, FleetEvent
from app.services.core.router_types import ModelState, RouterState
from app.services.machine.machine import Machine
from app.services.router.client import RouterClient

ACTIVITY_EVERY = 2.0
# A poll that takes longer than this is given up (the model shows no figures this round); the next round is due
# `every` seconds after the previous one began, or at once when it ran late, never two at a time.
POLL_TIMEOUT = 5.0
# Models asked at once on one router: enough for a fleet's worth in one round trip, without a burst of dozens of
# connections through one ssh tunnel.
PER_ROUTER = 8
# An idle model is asked once every this many rounds (6 s at the default 2 s): traffic that starts on it shows
# within that, and from then it is asked every round until a round finds it idle again.
IDLE_ROUNDS = 3


@dataclass(frozen=True)
class Target:
    """One router to poll: the machine it serves, a client for it, and the models loaded there now."""

    machine: str
    client: RouterClient
    models: tuple[str, ...]


@dataclass(frozen=True)
class ActivityChanged(FleetEvent):
    """One round's figures for a machine's loaded models (a model not listed has no figures: not loaded)."""

    models: tuple[ModelActivity, ...]
    hint: str | None = None
    """How to get figures where the router has no /metrics; said once per machine by whoever shows it."""
    not_answering: tuple[str, ...] = ()
    """Loaded models of this machine whose /metrics went unanswered (activity/answering.py)."""


def machine_target(m: Machine) -> Target | None:
    """What to poll on a followed machine: its loaded models (not loading, not sleeping: a sleeping child serves
    nothing, and asking it is pointless), when its router is up and its event stream connected."""
    c = m.client
    if c is None or m.view.router_state not in (RouterState.RUNNING, RouterState.ATTACHED):
        return None
    if m.view.stream not in ("sse", "polling"):
        return None
    loaded = tuple(i for i, info in m.models.items() if info.state is ModelState.LOADED)
    return Target(m.name, c, loaded) if loaded else None


def is_idle(a: ModelActivity) -> bool:
    """Nothing served since the previous poll and nothing in flight (a first poll, with no rate yet, is not idle:
    the next round gives its rate). A router without /metrics has nothing to show: asked as seldom as idle."""
    if not a.metrics:
        return True
    return a.tokens_per_s == 0 and a.prompt_tokens_per_s == 0 and not a.requests_processing and not a.requests_deferred


class ActivityPoller:
    def __init__(
        self,
        targets: Callable[[], Sequence[Target]],
        emit: Callable[[FleetEvent], None] | None = None,
        every: float = ACTIVITY_EVERY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.targets = targets
        self.emit = emit
        self.every = every
        self.clock = clock
        self.rates = Rates()
        self._slots_total: dict[tuple[str, str], int | None] = {}
        self._idle: dict[tuple[str, str], tuple[ModelActivity, int]] = {}  # last figures, rounds since asked
        self.idle_rounds = IDLE_ROUNDS
        self._task: asyncio.Task[None] | None = None
        self._polled: set[str] = set()  # machines that had something to poll last round
        self.answering = AnsweringWatch()
        self.changes: list[AnsweringChanged] = []
        """Models that stopped answering or answer again, since `run` last sent them (once per change)."""
        self.only: frozenset[str] | None = None
        """Machines to poll (None: every one). The dashboard polls what it shows: a hidden machine costs nothing."""

    # ---- one round ----

    async def poll(self) -> list[ActivityChanged]:
        """Poll every target once: one ActivityChanged per machine polled, in the targets' order, and an empty one
        for each machine polled last round and not now."""
        only = self.only
        targets = [t for t in self.targets() if only is None or t.machine in only]
        rounds = await asyncio.gather(*(self._router(t) for t in targets))
        self.rates.keep_only((t.machine, m) for t in targets for m in t.models)
        live = {(t.machine, m) for t in targets for m in t.models}
        for k in [k for k in self._slots_total if k not in live]:
            del self._slots_total[k]
        for k in [k for k in self._idle if k not in live]:
            del self._idle[k]
        self.changes += self.answering.forget_except(live)
        out = [
            ActivityChanged(t.machine, acts, hint, self.answering.not_answering(t.machine))
            for t, (acts, hint) in zip(targets, rounds, strict=True)
        ]
        # A machine with nothing left to poll (its models unloaded, its router gone) is told so once, or its last
        # figures would stand.
        polled = {t.machine for t in targets}
        out += [ActivityChanged(m, ()) for m in sorted(self._polled - polled)]
        self._polled = polled
        return out

    async def _router(self, t: Target) -> tuple[tuple[ModelActivity, ...], str | None]:
        gate = asyncio.Semaphore(PER_ROUTER)

        async def one(model: str) -> ModelActivity | None:
            key = (t.machine, model)
            shown = self._idle.get(key)
            if shown is not None and shown[1] + 1 < self.idle_rounds and not self.answering.is_suspect(*key):
                self._idle[key] = (shown[0], shown[1] + 1)
                return shown[0]
            async with gate:
                act = await self._model(t.machine, t.client, model)
            if act is not None and is_idle(act):
                self._idle[key] = (act, 0)
            else:
                self._idle.pop(key, None)
            return act

        got = await asyncio.gather(*(one(m) for m in t.models))
        acts = tuple(a for a in got if a is not None)
        hint = NO_METRICS_HINT if any(not a.metrics for a in acts) else None
        return acts, hint

    async def _model(self, machine: str, client: RouterClient, model: str) -> ModelActivity | None:
        bound = client.bound(POLL_TIMEOUT)  # a slow link is not a model that stopped answering
        metrics_in = False
        try:
            async with asyncio.timeout(bound):
                try:
                    text = await client.child_metrics(model, METRICS_LIMIT, timeout=bound)
                except RouterRefused as e:
                    self._saw(self.answering.answered(machine, model))
                    if e.status == 501:  # "This server does not support metrics endpoint"
                        return no_metrics(machine, model)
                    return None  # 400 "model is not loaded": it went between the list and this poll
                metrics_in = True
                self._saw(self.answering.answered(machine, model))
                metrics = parse_metrics(text)
                at = self.clock()
                total = await self._total_slots(machine, client, model)
                slots = None
                if metrics.get("llamacpp:requests_processing", 0) > 0:
                    slots = parse_slots(await client.child_slots(model, SLOTS_LIMIT, timeout=POLL_TIMEOUT))
        except (TimeoutError, RouterNotAnswering):
            if not metrics_in:  # the model's own /metrics, not the router: the router answers /models meanwhile
                self._saw(self.answering.silent(machine, model, bound))
            return None
        except HerdError:
            return None  # unreachable or garbage: no figures this round
        return self.rates.update(machine, model, sample_of(at, metrics, slots, total))

    def idle(self, machine: str, model: str) -> bool:
        """Whether the model's last poll found it idle (served nothing since the one before)."""
        return (machine, model) in self._idle

    def saw(self, change: AnsweringChanged | None) -> None:
        """A change found by someone else (the opt-in probe): sent with the next round's events."""
        self._saw(change)

    def _saw(self, change: AnsweringChanged | None) -> None:
        if change is not None:
            self.changes.append(change)

    async def _total_slots(self, machine: str, client: RouterClient, model: str) -> int | None:
        key = (machine, model)
        if key not in self._slots_total:
            try:
                self._slots_total[key] = (await client.model_props(model)).total_slots
            except HerdError:
                return None  # asked again next round
        return self._slots_total[key]

    # ---- forever ----

    async def run(self) -> None:
        """Poll until cancelled; each round's events go to `emit`."""
        while True:
            began = self.clock()
            rounds = await self.poll()
            changes, self.changes = self.changes, []
            if self.emit is not None:
                for ev in (*changes, *rounds):
                    self.emit(ev)
            await asyncio.sleep(max(0.0, self.every - (self.clock() - began)))

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self.run(), name="activity-poller")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
