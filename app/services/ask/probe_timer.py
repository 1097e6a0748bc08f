"""The opt-in `[ui] probe_every`: every that many seconds, a one-token probe (ask/probe.py) to each loaded model
that served no request since the last one (a model serving requests is answering: nothing to prove).

Never to a model that sleeps when idle (`--sleep-idle-seconds` in its arguments, from the router's command line or
its preset section): a probe is a completion, which resets the child's idle timer, so probing it more often than
it sleeps would keep it awake for ever. Such a model is still watched by the activity poll's /metrics, which the
idle timer ignores. Results go through the activity poller's AnsweringWatch, so the poll and the probe agree.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence

from app.services.activity.poll import ActivityPoller, machine_target
from app.services.ask.probe import probe
from app.services.ask.vision import is_projector
from app.services.core.router_types import ModelInfo
from app.services.machine.machine import Machine

SLEEPS_FLAG = "--sleep-idle-seconds"


def sleeps_when_idle(m: ModelInfo) -> bool:
    """Whether the child was started to sleep when idle (the router passes the flag on in `status.args`)."""
    args = m.args
    for i, a in enumerate(args):
        if a == SLEEPS_FLAG and i + 1 < len(args):
            return args[i + 1].strip() not in ("", "-1", "0")
        if a.startswith(SLEEPS_FLAG + "="):
            return a.split("=", 1)[1].strip() not in ("", "-1", "0")
    return False


class ProbeTimer:
    def __init__(self, machines: Callable[[], Sequence[Machine]], poller: ActivityPoller, every: float) -> None:
        self.machines = machines
        self.poller = poller
        self.every = every
        self._task: asyncio.Task[None] | None = None

    def due(self) -> list[tuple[Machine, str]]:
        """The (machine, model) pairs to probe now."""
        out: list[tuple[Machine, str]] = []
        for m in self.machines():
            t = machine_target(m)
            if t is None or (self.poller.only is not None and m.name not in self.poller.only):
                continue
            for model in t.models:
                info = m.models.get(model)
                if info is None or is_projector(model) or sleeps_when_idle(info):
                    continue
                if self.poller.idle(m.name, model) or self.poller.answering.is_suspect(m.name, model):
                    out.append((m, model))
        return out

    async def round(self) -> None:
        pairs = self.due()

        async def one(m: Machine, model: str) -> None:
            client = m.client
            if client is None:
                return
            r = await probe(client, model)
            if r.answering:
                self.poller.saw(self.poller.answering.answered(m.name, model))
            elif r.probed:
                self.poller.saw(self.poller.answering.probe_failed(m.name, model, r.reason))

        await asyncio.gather(*(one(m, model) for m, model in pairs))

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.every)
            await self.round()

    def start(self) -> None:
        if self._task is None and self.every > 0:
            self._task = asyncio.create_task(self.run(), name="probe-timer")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
