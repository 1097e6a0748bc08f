"""Fit verdicts in the dashboard: estimates made in workers, kept per model and settings, and the ask-first load.

An estimate reads the model's GGUF header on its machine (over ssh for a remote one), so it is never made on the
UI's path: `request` queues it for a worker (one per machine, one estimate at a time), and what is shown reads only
what is already known. A model's estimate is keyed by its rendered arguments, so a preset edit is estimated anew.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from app.services.core.errors import HerdError
from app.services.core.router_types import ModelInfo
from app.services.core.textsafe import visible
from app.services.fit.estimate import FitEstimate
from app.services.fit.preview import FitPreview, preview, verdict_words
from app.ui.screens.confirm import ConfirmScreen
from app.ui.text.format import is_down

if TYPE_CHECKING:
    from textual.app import App
    from textual.worker import WorkType

    from app.ui.state.app_protocol import HerdApi

ESTIMATE_TIMEOUT = 15.0  # a header read over a stalled link: give up and say "fit unknown"
RETRY_AFTER = 60.0  # an estimate that failed is asked again after this, when something wants it
LOAD_WAIT = 5.0  # `l` on a model not estimated yet waits this long for it, then loads without asking

Key = tuple[str, str, tuple[str, ...], bool]  # machine, model id, its arguments, whether the machine has a GPU


def fit_args(args: tuple[str, ...]) -> tuple[str, ...]:
    """The arguments that decide a fit: without `--port`, which the router renders anew on every load (an
    unloaded model keeps its last one), so a load/unload cycle is not a new setting to estimate."""
    out: list[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
        elif a == "--port":
            skip = True
        elif not a.startswith("--port="):
            out.append(a)
    return tuple(out)


@dataclass(frozen=True)
class Known:
    estimate: FitEstimate | None
    reason: str  # why there is no estimate
    at: float


class FitAdvisor:
    def __init__(self, app: Callable[[], App[Any]], on_new: Callable[[str], None], clock: Callable[[], float]) -> None:
        self._app = app
        self._on_new = on_new  # told the machine whose estimate arrived (the fleet view repaints)
        self._clock = clock
        # Bound: one estimate per model of each machine, for its current settings (a newer one replaces it).
        self._known: dict[Key, Known] = {}
        self._latest: dict[tuple[str, str], Key] = {}
        self._stored = 0  # estimates stored so far: what the fleet view's cached words are stamped with
        self._queues: dict[str, list[tuple[Key, ModelInfo]]] = {}
        self._busy: set[str] = set()  # machines with a worker draining their queue
        self._arrived = asyncio.Event()
        self._words: dict[str, tuple[tuple[object, ...], dict[str, str]]] = {}

    def _herd(self) -> HerdApi:
        return cast("HerdApi", self._app())

    def _key(self, machine: str, m: ModelInfo) -> Key:
        stats = self._herd().state.get(machine).stats
        return machine, m.id, fit_args(m.args), bool(stats and stats.gpus)

    def remember(self, key: Key, known: Known) -> None:
        old = self._latest.get((key[0], key[1]))
        if old is not None and old != key:
            del self._known[old]
        self._latest[(key[0], key[1])] = key
        self._known[key] = known
        self._stored += 1

    def known(self, machine: str, m: ModelInfo) -> Known | None:
        return self._known.get(self._key(machine, m))

    def _wanted(self, key: Key) -> bool:
        k = self._known.get(key)
        if k is None:
            return True
        return k.estimate is None and self._clock() - k.at >= RETRY_AFTER

    def request(self, machine: str, models: Iterable[ModelInfo], running_too: bool = False) -> None:
        """Queue estimates for the models not known yet. Running ones only when asked: loading them is moot,
        but the one a load evicts gives its memory back."""
        if not self._herd().fleet.has_fit:
            return
        queue = self._queues.setdefault(machine, [])
        queued = {k for k, _ in queue}
        for m in models:
            key = self._key(machine, m)
            if (running_too or not m.state.running) and key not in queued and self._wanted(key):
                queue.append((key, m))
                queued.add(key)
        if queue and machine not in self._busy:
            self._busy.add(machine)
            work = cast("WorkType[None]", partial(self._drain, machine))  # made when it runs: see load_asking
            self._app().run_worker(work, name=f"fit {machine}", group=f"fit:{machine}", exit_on_error=False)

    def request_all(self) -> None:
        """Every machine's models not running, but not on a machine known to be down: each read would wait out
        ESTIMATE_TIMEOUT there (`l` on one of its models still asks, and says why it is unknown)."""
        for machine, st in self._herd().state.machines.items():
            if not is_down(st.view):
                self.request(machine, st.models)

    def pending(self) -> bool:
        return any(self._queues.values()) or bool(self._busy)

    async def _drain(self, machine: str) -> None:
        try:
            queue = self._queues[machine]
            while queue:
                key, m = queue[0]
                try:
                    async with asyncio.timeout(ESTIMATE_TIMEOUT):
                        est = await self._herd().fleet.fit_estimate(machine, m, key[3])
                    known = Known(est, "", self._clock())
                except TimeoutError:
                    known = Known(None, f"no answer within {ESTIMATE_TIMEOUT:.0f} s", self._clock())
                except HerdError as e:
                    known = Known(None, str(e).splitlines()[0] if str(e) else type(e).__name__, self._clock())
                finally:
                    queue.pop(0)  # an unexpected failure goes to the app's worker handler, not round again
                self.remember(key, known)
                self._arrived.set()
                self._arrived = asyncio.Event()
                self._on_new(machine)
        finally:
            self._busy.discard(machine)

    async def settle(self, timeout: float, done: Callable[[], bool] | None = None) -> None:
        """Wait until `done()` (default: nothing pending) or `timeout` seconds, whichever first."""
        finished = done or (lambda: not self.pending())
        try:
            async with asyncio.timeout(timeout):
                while not finished():
                    await self._arrived.wait()
        except TimeoutError:
            return

    def preview(self, machine: str, model_id: str) -> FitPreview:
        """What is known now of loading `model_id` on `machine`; never waits."""
        st = self._herd().state.get(machine)
        target = st.by_id.get(model_id)
        k = self.known(machine, target) if target is not None else None
        victim_est = None
        est = k.estimate if k else None
        models = st.models
        if est is not None:
            first = preview(machine, model_id, models, st.view.models_max, st.stats, est)
            victim = st.by_id.get(first.evicts[0]) if first.evicts else None
            vk = self.known(machine, victim) if victim is not None else None
            victim_est = vk.estimate if vk else None
        if not self._herd().fleet.has_fit:
            reason = "no model headers to read here"
        else:
            reason = k.reason if k else ("estimating" if self.pending() else "not estimated yet")
        return preview(machine, model_id, models, st.view.models_max, st.stats, est, reason, victim_est)

    def fit_words(self, machine: str) -> dict[str, str]:
        """Per model not running: its verdict in a word ("fits", "tight", "no", "?" when unknown), for the fleet
        view. Remembered until the machine's models, stats or what is known change: the view repaints often."""
        st = self._herd().state.get(machine)
        stamp = (st.version, id(st.stats), st.view.models_max, self._stored, self._herd().fleet.has_fit)
        hit = self._words.get(machine)
        if hit is not None and hit[0] == stamp:
            return hit[1]

        def estimate_of(m: ModelInfo) -> FitEstimate | None:
            k = self.known(machine, m)
            return k.estimate if k else None

        # Not a preview per model (each among every model: 45 ms for 2,000 models, seconds for 20,000).
        words = verdict_words(st.models, st.view.models_max, st.stats, estimate_of)
        words = {mid: ("?" if w == "unknown" else w) for mid, w in words.items()}
        self._words[machine] = (stamp, words)
        return words

    def load_asking(self, machine: str, model_id: str, load: Callable[[str, str], None]) -> None:
        """`l`: load at once when the estimate says it fits without evicting; ask first when it will not fit or
        will evict something; load with a quiet "fit unknown" when there is no estimate to go by. Decided at once
        when nothing has to be read first; otherwise in a worker that waits for the estimate (at most LOAD_WAIT)."""
        st = self._herd().state.get(machine)
        target = next((m for m in st.models if m.id == model_id), None)
        if target is None or not self._herd().fleet.has_fit or self.known(machine, target) is not None:
            self._decide(machine, model_id, load)
            return

        async def estimate_then_decide() -> None:
            assert target is not None
            self.request(machine, [target])
            # the running models too: the one a load evicts gives its memory back
            self.request(machine, [m for m in st.models if m.state.running], running_too=True)
            await self.settle(LOAD_WAIT, lambda: self.known(machine, target) is not None)
            self._decide(machine, model_id, load)

        name = f"fit-check {model_id}"
        # exclusive: `l` pressed again while the first waits replaces it, so one press is one load (or one question).
        # The function, not a coroutine made now: a worker cancelled before it ran (`l` then `q` in one read) left
        # its coroutine never awaited, and Python said so on stderr as the dashboard quit.
        self._app().run_worker(
            cast("WorkType[None]", estimate_then_decide),
            name=name,
            group=f"fit-check:{machine}",
            exclusive=True,
            exit_on_error=False,
        )

    def _decide(self, machine: str, model_id: str, load: Callable[[str, str], None]) -> None:
        p = self.preview(machine, model_id)
        if not p.ask:
            if p.verdict == "unknown" and self._herd().fleet.has_fit:
                note = p.line.split(" · ")[0]
                self._herd().notify(f"{model_id} on {machine}: {note}", title="load", timeout=4, markup=False)
            load(machine, model_id)
            return

        def answered(yes: bool | None) -> None:
            if yes:
                load(machine, model_id)

        title = f"load {visible(model_id)} on {visible(machine)}?"
        body = p.question + "\n\n" + "\n".join(p.line.split(" · "))
        self._app().push_screen(ConfirmScreen(title, body, yes="Load"), answered)


def default_clock() -> float:
    return time.monotonic()
