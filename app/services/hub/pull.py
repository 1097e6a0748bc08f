"""Pull `owner/repo[:QUANT]` onto a machine through its router's own download child, and tell the outcome that
matters: the model is in the router's list (from the cache) with its files on disk, or why not.

The router's events are followed for progress (`download_progress`: the whole per-URL map each time) and for the
end (`download_finished` / `download_failed`, then `models_reload`), but they are not the truth: a repo the hub
does not have, a quant the repo does not have and an unreachable hub all end in `download_finished` (see
hub/download_log.py). So the end is judged by the router's list, read after the end, and the files in its cache;
when the model is not there, the cause comes from the download child's log lines.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from app.services.core.errors import HerdError, RouterRefused
from app.services.core.router_types import (
    DownloadProgressEvent,
    DownloadResultEvent,
    ModelInfo,
    ModelListEvent,
    ModelsReloadEvent,
    ModelState,
    ModelStatusEvent,
    RouterEvent,
    StreamState,
    StreamStateEvent,
)
from app.services.core.waits import within
from app.services.hub.cache_files import model_files, router_cache
from app.services.hub.download_log import download_cause
from app.services.hub.progress import ProgressMeter, PullProgress
from app.services.machine.machine import Machine
from app.services.router.client import RouterClient
from app.services.router.event_stream import router_events

SPEC_RE = re.compile(r"(?P<repo>[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95})(?::(?P<quant>[A-Za-z0-9_.-]{1,40}))?")
# After the router's end event, the list is read within this (the reload it triggers takes well under a second).
SETTLE_TIMEOUT = 10.0
# With no event for this long, the list is read to see whether the download is still there (events are lost on a
# reconnect: SSE replays nothing).
QUIET_CHECK = 5.0
# The event stream must be connected within this before the download is asked for (else its first events are lost).
STREAM_TIMEOUT = 15.0
# Bound: events read ahead of the pull's handling of them.
EVENT_BACKLOG = 1024
# Bound: log lines read back for the cause.
LOG_LINES = 600


class BadSpec(ValueError):
    pass


def parse_spec(spec: str) -> tuple[str, str | None]:
    m = SPEC_RE.fullmatch(spec.strip())
    if not m or ".." in spec:
        raise BadSpec(f"not a repo: {spec!r} (expected OWNER/REPO or OWNER/REPO:QUANT)")
    return m["repo"], (m["quant"].upper() if m["quant"] else None)


@dataclass(frozen=True)
class PullOutcome:
    machine: str
    requested: str
    ok: bool
    model: str | None = None  # its id in the router's list, when it landed
    cause: str = ""  # one line: what happened
    router_said: str = ""  # the router's own end event ("download_finished", "download_failed", "" for none)
    evidence: tuple[str, ...] = ()  # the log lines the cause was read from
    files: tuple[str, ...] = ()  # the model's files in the cache on the serving machine
    bytes_on_disk: int = 0
    cancelled: bool = False
    already: bool = False  # it was in the list before: nothing was downloaded

    def as_json(self) -> dict[str, Any]:
        return {
            "machine": self.machine, "requested": self.requested, "ok": self.ok, "model": self.model,
            "cause": self.cause, "router_said": self.router_said, "evidence": list(self.evidence),
            "files": list(self.files), "bytes_on_disk": self.bytes_on_disk, "cancelled": self.cancelled,
            "already": self.already,
        }  # fmt: skip


def landed(models: list[ModelInfo], repo: str, quant: str | None) -> ModelInfo | None:
    """The cache model a pull of repo[:quant] became (ids compare without case: the router upper-cases the tag)."""
    want = f"{repo}:{quant}".lower() if quant else None
    for m in models:
        if m.state in (ModelState.DOWNLOADING, ModelState.DOWNLOADED):
            continue
        mid = m.id.lower()
        if (want is not None and mid == want) or (want is None and mid.startswith(repo.lower() + ":")):
            return m
    return None


@dataclass
class Pull:
    """One pull; `run()` drives it to its outcome, `cancel()` (from anywhere) asks the router to stop it."""

    machine: Machine
    spec: str
    expected_total: int = 0
    on_progress: Callable[[PullProgress], None] | None = None
    on_event: Callable[[RouterEvent, float], None] | None = None  # every event of this pull, as it arrives
    events: Callable[[RouterClient], AsyncIterator[RouterEvent]] = router_events
    clock: Callable[[], float] = time.monotonic
    _cancel: asyncio.Event = field(default_factory=asyncio.Event)
    _client: RouterClient | None = None
    started: asyncio.Event = field(default_factory=asyncio.Event)
    """Set at the download's first progress (pulls.py also sets it when the pull ends: the next pull of the repo
    waits for it)."""

    def __post_init__(self) -> None:
        self.repo, self.quant = parse_spec(self.spec)
        self.name = f"{self.repo}:{self.quant}" if self.quant else self.repo
        self.meter = ProgressMeter(self.name, self.expected_total)

    @property
    def cancel_asked(self) -> bool:
        return self._cancel.is_set()

    async def cancel(self) -> None:
        """POST /models/unload on the downloading name: the router cancels the child and waits for it."""
        self._cancel.set()
        client = self._client or await self.machine.router_client()
        await client.unload(self.name)

    async def run(self) -> PullOutcome:
        m = self.machine
        client = self._client = await m.router_client()
        before = await client.models()
        was = landed(before, self.repo, self.quant)
        if was is not None:
            return await self._outcome(True, was, "already in the router's list: nothing downloaded", already=True)
        downloading = any(x.id == self.name and x.state is ModelState.DOWNLOADING for x in before)
        # The stream is read by a task of its own into a queue: a wait with a timeout on the generator itself
        # would cancel it, and a cancelled async generator is finished for good.
        queue: asyncio.Queue[RouterEvent | None] = asyncio.Queue(EVENT_BACKLOG)
        pump = asyncio.ensure_future(self._pump(self.events(client), queue))
        said = ""
        try:
            await self._connected(queue)
            if not downloading:  # else: somebody (another llamaherd) is pulling it already; follow that one
                try:
                    await client.download(self.name)
                except RouterRefused as e:
                    return PullOutcome(m.name, self.name, False, cause=f"the router refused: {e}", router_said="")
            said = await self._follow(queue, client)
        finally:
            pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pump
        return await self._judge(client, said)

    @staticmethod
    async def _pump(stream: AsyncIterator[RouterEvent], queue: asyncio.Queue[RouterEvent | None]) -> None:
        try:
            async for ev in stream:
                await queue.put(ev)  # a full queue holds the reading back, never memory
        finally:
            with contextlib.suppress(asyncio.QueueFull):
                queue.put_nowait(None)  # the stream ended (when full: the reader's quiet check finds the end)
            with contextlib.suppress(Exception):
                await stream.aclose()  # type: ignore[attr-defined]

    async def _connected(self, queue: asyncio.Queue[RouterEvent | None]) -> None:
        async with asyncio.timeout(STREAM_TIMEOUT):
            while (ev := await queue.get()) is not None:
                if isinstance(ev, StreamStateEvent) and ev.state in (StreamState.CONNECTED, StreamState.POLLING):
                    return

    async def _follow(self, queue: asyncio.Queue[RouterEvent | None], client: RouterClient) -> str:
        """Events until the download ends; the router's own word for the end ("" when it was not seen)."""
        said = ""
        seen_downloading = False
        while True:
            read_now = False
            try:
                got = await within(queue.get(), QUIET_CHECK)
            except TimeoutError:
                got, read_now = ModelListEvent(model="*", models=tuple(await client.models())), True
            if got is None:
                return said
            ev = got
            now = self.clock()
            if ev.model == self.name and self.on_event is not None:
                self.on_event(ev, now)
            if isinstance(ev, DownloadProgressEvent) and ev.model == self.name:
                seen_downloading = True
                self.started.set()
                p = self.meter.update(ev.done, ev.total, now)
                if self.on_progress is not None:
                    self.on_progress(p)
            elif isinstance(ev, DownloadResultEvent) and ev.model == self.name:
                said = "download_finished" if ev.ok else "download_failed"
            elif isinstance(ev, ModelsReloadEvent) and said:
                return said
            elif isinstance(ev, ModelStatusEvent) and ev.model == self.name:
                seen_downloading = seen_downloading or ev.status is ModelState.DOWNLOADING
                if ev.status is ModelState.UNLOADED and not said:
                    return said  # the child went without a word (killed): the list says the rest
            elif isinstance(ev, ModelListEvent):
                # The stream's list at connect was read before the download was asked for: its absence there
                # says nothing. A list read after (a reconnect, or here after silence) without it is the end.
                mine = [x for x in ev.models if x.id == self.name]
                if mine and mine[0].state is ModelState.DOWNLOADING:
                    seen_downloading = True
                elif said or seen_downloading or read_now:
                    return said

    async def _judge(self, client: RouterClient, said: str) -> PullOutcome:
        """The truth after the end: the router's list (read again, which also makes it reload) and the cache."""
        models: list[ModelInfo] = []
        deadline = self.clock() + SETTLE_TIMEOUT
        while self.clock() < deadline:
            models = await client.models()
            if not any(x.id == self.name and x.state is ModelState.DOWNLOADING for x in models):
                break
            await asyncio.sleep(0.2)
        got = landed(models, self.repo, self.quant)
        if got is not None:
            return await self._outcome(True, got, f"pulled: {got.id} is in the router's list", said=said)
        cause, evidence = await self._cause()
        if self._cancel.is_set():
            cause = "cancelled on request" + (f" ({cause})" if cause and "cancelled" not in cause else "")
        elif not cause:
            cause = f"not in the router's list after the download (the router said {said or 'nothing'})"
            if self.machine.manager is None:
                cause += "; its log, which says why, is not readable from here (an attached router)"
        return PullOutcome(
            self.machine.name, self.name, False, cause=cause, router_said=said, evidence=evidence,
            cancelled=self._cancel.is_set(),
        )  # fmt: skip

    async def _cause(self) -> tuple[str, tuple[str, ...]]:
        m = self.machine
        if m.manager is None:
            return "", ()
        try:
            lines = await m.manager.log_tail(LOG_LINES)
        except HerdError:
            return "", ()
        found = download_cause(lines, self.name, m.cfg.hub.rstrip("/"), m.name)
        return found.cause, found.evidence

    async def _outcome(
        self, ok: bool, model: ModelInfo, cause: str, said: str = "", already: bool = False
    ) -> PullOutcome:
        files: tuple[str, ...] = ()
        size = 0
        cache = None
        try:
            cache = await router_cache(self.machine)
            if cache is not None:
                found = [f for f in await model_files(self.machine, cache, model.id) if "/snapshots/" in f.path]
                files, size = tuple(f.path for f in found), sum(f.size for f in found)
        except (HerdError, OSError):
            cache = None
        if not already and cache is None:
            cause += " (the cache folder on the machine is not known here: its files were not checked)"
        elif not already and not files:
            cause += f" (but no file of it was found in {cache} on {self.machine.name})"
        return PullOutcome(
            self.machine.name, self.name, ok, model=model.id, cause=cause, router_said=said, files=files,
            bytes_on_disk=size, already=already,
        )  # fmt: skip
