"""One machine: its transport, its router (managed or attached), and the followers that keep its view live.

Everything a machine does runs in its own tasks, so a machine that is down or slow never delays another.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from app.config import MachineConfig
from app.services.core.backoff import Backoff
from app.services.core.download_meter import DownloadMeters
from app.services.core.errors import HerdError, ModelFailed, RouterError, RouterNotRunning, TransportError
from app.services.core.fleet_events import (
    FleetEvent,
    HostStatsChanged,
    LogLines,
    MachineChanged,
    MachineView,
    ModelEvent,
    ModelsChanged,
    ModelsUpdated,
    Problem,
)
from app.services.core.host_types import Connection
from app.services.core.log_lines import SKIPPED_SOURCE
from app.services.core.router_types import (
    DownloadProgressEvent,
    DownloadResultEvent,
    ModelInfo,
    ModelListEvent,
    ModelState,
    ModelStatusEvent,
    RouterEvent,
    RouterState,
    StreamState,
    StreamStateEvent,
)
from app.services.core.waits import within
from app.services.hosts.local import LocalTransport
from app.services.hosts.transport import Transport
from app.services.lifecycle.liveness import shown_state
from app.services.lifecycle.manager import RouterManager, RouterRecord, RouterStatus
from app.services.logs.parse import LogAttributor
from app.services.logs.scrollback import Scrollback
from app.services.logs.window import LogWindow
from app.services.machine.stats_rounds import next_round, round_number
from app.services.router.client import RouterClient
from app.services.router.event_stream import router_events
from app.services.router.model_fold import first_sight, fold_list, fold_router_gone, fold_status

STATS_EVERY = 2.0
# The router's process-tree RSS (router and model children) is measured every this many stats rounds (10 s) and
# sent with each round's stats in between: locally each measure walks the whole process table, over ssh it is an
# agent request, and nothing on the dashboard needs it fresher (the cards show host figures).
RSS_EVERY_ROUNDS = 5
INSPECT_EVERY = 2.0  # how often a stopped/absent router is looked at again
LOG_FLUSH_EVERY = 0.1
# Lines parsed per flush, at most (5,000 a second): more than anyone reads; beyond it the newest are kept and the
# rest counted as skipped (see logs/window.py). The CLI's `logs -f` is a pipe and skips nothing.
LOG_PARSE_PER_FLUSH = 500
LOG_FIRST_LINES = 200
FAILURE_LOG_LINES = 8
# A downloading row's figure is told within this of its event: at once when the row was last told at least this
# long ago, otherwise together with the figures that come before this deadline. The router sends a progress event
# every ~5 MB, at most 10 a second (reference §2.7), and each one repainted the dashboard (bench/pull_cost.py); told
# this way, three events make one paint at 10 a second (3.3 paints a second, against 4 for a fixed quarter-second),
# and each event's figure is on screen within 0.3 s (p95 254 ms, bench/pull_to_screen.py). Never dropped: a telling
# reads the newest figure.
DOWNLOAD_SHOWN_WITHIN = 0.25
STREAM_STABLE_AFTER = 5.0  # a stream up at least this long resets the reconnect backoff
CLOSE_WAIT = 3.0  # how long closing waits for each step (the followers, then the router client)

Emit = Callable[[FleetEvent], None]


def make_transport(cfg: MachineConfig) -> Transport:
    if cfg.is_local:
        return LocalTransport(cfg.name)
    # Imported here: asyncssh and its crypto are ~15 MB and ~0.1 s of start-up that a fleet of local machines
    # never uses.
    from app.services.ssh.transport import SshTransport

    return SshTransport(
        cfg.name,
        cfg.host,
        user=cfg.user,
        port=cfg.port,
        identity_file=cfg.identity_file,
        accept_new_host_key=cfg.accept_new_host_key,
        known_hosts=cfg.known_hosts,
    )


class Machine:
    def __init__(self, cfg: MachineConfig, emit: Emit, transport: Transport | None = None,
                 log_capacity: int = 2000) -> None:  # fmt: skip
        self.cfg = cfg
        self.name = cfg.name
        self.emit = emit
        self.transport = transport or make_transport(cfg)
        self.manager = None if cfg.attach_only else RouterManager(cfg, self.transport)
        self.client: RouterClient | None = None
        self._client_key: str | None = None
        self.models: dict[str, ModelInfo] = {}
        self.logs = Scrollback(log_capacity)
        self.log_lines_added = 0  # ever, so a view that took the scrollback knows which LogLines it already holds
        self.attributor = LogAttributor()
        self.downloads = DownloadMeters()  # bytes, rate and time left of the models downloading here
        self._download_told: dict[str, float] = {}  # model -> when its row was last told (DOWNLOAD_SHOWN_WITHIN)
        self._download_due: dict[str, asyncio.TimerHandle] = {}
        self.view = MachineView(
            name=cfg.name,
            host=cfg.host,
            connection=Connection.LOCAL if self.transport.is_local else Connection.CONNECTING,
            managed=not cfg.attach_only,
            models_max=None if cfg.attach_only else cfg.models_max,
        )
        self._poke = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._log_path: str | None = None
        # What the followers last said of the router, and whether it answers: shown together as one state.
        self._told_state = self.view.router_state
        self._answering = True
        self._flaky = False  # the last stream broke soon after it connected
        self.transport.on_state_change = self._on_transport_state

    # ---- view ----

    def _update(self, **changes: object) -> None:
        told = changes.get("router_state", self._told_state)
        assert isinstance(told, RouterState)
        self._told_state = told
        changes["router_state"] = shown_state(told, self._answering)
        new = dataclasses.replace(self.view, **changes)  # type: ignore[arg-type]
        if new != self.view:
            self.view = new
            self.emit(MachineChanged(self.name, new))

    def _on_transport_state(self, state: Connection, reason: str) -> None:
        self._update(connection=state, connection_reason=reason)

    def _models_changed(self) -> None:
        self.emit(ModelsChanged(self.name, tuple(self.models.values())))

    # ---- lifecycle of the followers ----

    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._follow_router(), name=f"{self.name}:router"),
            asyncio.create_task(self._follow_stats(), name=f"{self.name}:stats"),
            asyncio.create_task(self._follow_log(), name=f"{self.name}:log"),
        ]

    async def close(self) -> None:
        for t in self._tasks:
            t.cancel()
        # Bounded: a follower was seen staying "cancelling" for good at quit, inside its event stream (a connection
        # close within httpcore's cancellation shield is suspected); quitting must not wait on that.
        await _settle(self._tasks, CLOSE_WAIT)
        self._tasks = []
        if self.client is not None:
            await _settle([asyncio.ensure_future(self.client.aclose())], CLOSE_WAIT)
            self.client = None
        with contextlib.suppress(Exception):
            await self.transport.close()

    def poke(self) -> None:
        """Look at the router again now (after a start or stop)."""
        self._poke.set()

    async def _wait_poke(self, timeout: float) -> None:
        with contextlib.suppress(TimeoutError):
            await within(self._poke.wait(), timeout)  # not wait_for: it can lose a cancel on 3.11 (core/waits.py)
        self._poke.clear()

    # ---- router ----

    async def _follow_router(self) -> None:
        backoff = Backoff()
        while True:
            try:
                await self.transport.connect()
                if self.manager is None:
                    if await self._follow_attached():
                        backoff.reset()  # it was up a while: a router back after a long outage is retried quickly
                    await self._wait_poke(backoff.next())
                    continue
                status = await self.manager.inspect()
                self._show_status(status)
                if status.state is RouterState.RUNNING and status.record is not None:
                    if await self._stream(status.record):
                        backoff.reset()
                        continue  # the stream ended: look again at once (a kill -9 shows within a second)
                    # Up only briefly (a router that connects and then sends garbage): retried ever more slowly.
                    await self._wait_poke(backoff.next())
                    continue
                await self._wait_poke(0.25 if status.state is RouterState.STARTING else INSPECT_EVERY)
                backoff.reset()
            except asyncio.CancelledError:
                raise
            except HerdError as e:
                if isinstance(e, TransportError):
                    self._update(connection=Connection.UNREACHABLE, connection_reason=str(e))
                else:
                    self._update(router_reason=str(e))
                await self._wait_poke(backoff.next())

    def _show_status(self, st: RouterStatus) -> None:
        rec = st.record
        state = st.state
        alive = state in (RouterState.RUNNING, RouterState.STARTING)
        self._update(
            router_state=state,
            router_reason=st.reason or ("" if self._answering else self.view.router_reason),
            pid=rec.pid if rec else None,
            port=rec.port if rec else None,
            started_at=rec.started_at if rec and alive else None,
            log_tail=st.log_tail,
            open_router=bool(rec and alive and not rec.requires_key),
        )
        if not alive and any(m.state.running for m in self.models.values()):
            # Nothing runs on a router that is gone; show it rather than the last list seen.
            self.models = fold_router_gone(self.models)
            self._models_changed()

    async def client_for(self, url: str, rec: RouterRecord | None = None) -> RouterClient:
        """A client for a router URL on that machine, through the ssh tunnel when the machine is remote, with the
        key of the router in `rec` (a managed one) or else the machine's api_key_env."""
        if not self.transport.is_local:
            parts = urlsplit(url)
            local = await self.transport.forward_port(parts.port or 80)
            url = urlunsplit((parts.scheme, f"127.0.0.1:{local}", parts.path, "", ""))
        key = await self.manager.client_key(rec) if self.manager is not None else self.cfg.api_key()
        if self.client is not None and self.client.base_url == url.rstrip("/") and self._client_key == key:
            return self.client
        if self.client is not None:
            await self.client.aclose()
        rtt = self.transport.round_trip
        self.client, self._client_key = RouterClient(url, api_key=key, name=self.name, round_trip=rtt), key
        self._update(url=self.client.base_url)
        return self.client

    async def _follow_attached(self) -> bool:
        assert self.cfg.url is not None
        client = await self.client_for(self.cfg.url)
        self._update(port=urlsplit(self.cfg.url).port)
        return await self._consume(client, attached=True)

    async def _stream(self, rec: RouterRecord) -> bool:
        client = await self.client_for(f"http://127.0.0.1:{rec.port}", rec)
        return await self._consume(client, attached=False)

    async def _consume(self, client: RouterClient, attached: bool) -> bool:
        """Follow one connection of the event stream until it drops. True if it stayed connected a while."""
        events = router_events(client)
        connected = False
        loop = asyncio.get_running_loop()
        since = loop.time()
        confirm: asyncio.TimerHandle | None = None
        try:
            async for ev in events:
                if isinstance(ev, StreamStateEvent):
                    self._answering = ev.state != StreamState.NOT_ANSWERING
                    if ev.state == StreamState.NOT_ANSWERING:
                        if confirm is not None:
                            confirm.cancel()
                        told = RouterState.ATTACHED if attached else self._told_state
                        self._update(router_reason=ev.reason, router_state=told)
                        if ev.retry_in is None:
                            continue  # still connected: it says "connected" again when /health answers
                        return connected and loop.time() - since >= STREAM_STABLE_AFTER
                    if ev.state == StreamState.DISCONNECTED:
                        self._update(
                            stream="down",
                            router_reason=ev.reason,
                            router_state=RouterState.UNREACHABLE if attached else self._told_state,
                        )
                        stable = connected and loop.time() - since >= STREAM_STABLE_AFTER
                        self._flaky = connected and not stable
                        return stable
                    if not connected:
                        connected, since = True, loop.time()
                    stream = "sse" if ev.state == StreamState.CONNECTED else "polling"
                    changes: dict[str, object] = {"stream": stream, "router_reason": ev.reason}
                    if attached:
                        changes["router_state"] = RouterState.ATTACHED
                    if self._flaky:
                        # Its last stream broke soon after connecting (garbage, an answer without end): the
                        # failure stays shown until this one has lasted, instead of flashing "attached" between.
                        if confirm is not None:
                            confirm.cancel()
                        confirm = loop.call_later(STREAM_STABLE_AFTER, self._confirm, changes)
                        continue
                    self._update(**changes)
                    continue
                await self._apply(ev)
        finally:
            if confirm is not None:
                confirm.cancel()
            with contextlib.suppress(Exception):
                await events.aclose()
        return connected and loop.time() - since >= STREAM_STABLE_AFTER

    def _confirm(self, changes: dict[str, object]) -> None:
        self._flaky = False
        self._update(**changes)

    async def _apply(self, ev: RouterEvent) -> None:
        if isinstance(ev, ModelListEvent):
            self._apply_list(ev.models)
        elif isinstance(ev, DownloadProgressEvent | DownloadResultEvent):
            self._apply_download(ev)
        elif isinstance(ev, ModelStatusEvent):
            self._apply_status(ev)
            if ev.status is ModelState.FAILED:
                self.emit(ModelEvent(self.name, ev))
                await self._report_failure(ev.model, ev.exit_code)
                return
        self.emit(ModelEvent(self.name, ev))

    def relisted(self, models: Iterable[ModelInfo]) -> None:
        """A list a command read (rm, once the router deleted a model): taken as the stream's would be. The router
        announces no change after `DELETE /models`, and its row stayed until the next re-read (30 s)."""
        self._apply_list(tuple(models))

    def _apply_list(self, models: tuple[ModelInfo, ...]) -> None:
        self.attributor.learn_models(models)
        fresh = fold_list(self.models, models)
        if fresh != self.models:
            self.models = fresh
            self._models_changed()

    def _apply_status(self, ev: ModelStatusEvent) -> None:
        old = self.models.get(ev.model) or first_sight(ev.model)
        new = fold_status(old, ev)
        if new != old:
            self.models[ev.model] = new
            self.emit(ModelsUpdated(self.name, (new,)))  # the list itself is sent on a list read only

    def _apply_download(self, ev: DownloadProgressEvent | DownloadResultEvent) -> None:
        """A downloading row carries its progress (the list has none), whoever asked for the download."""
        if isinstance(ev, DownloadResultEvent):
            self.downloads.forget(ev.model)
            self._download_told.pop(ev.model, None)
            due = self._download_due.pop(ev.model, None)
            if due is not None:
                due.cancel()
            return
        old = self.models.get(ev.model) or first_sight(ev.model)
        progress = self.downloads.update(ev.model, ev.done, ev.total)
        self.models[ev.model] = dataclasses.replace(old, state=ModelState.DOWNLOADING, download=progress)
        if ev.model in self._download_due:
            return  # a telling is due before this figure's deadline, and it reads the newest
        told = self._download_told.get(ev.model)
        if told is None or time.monotonic() - told >= DOWNLOAD_SHOWN_WITHIN:
            self._tell_download(ev.model)
        else:
            later = asyncio.get_running_loop().call_later(DOWNLOAD_SHOWN_WITHIN, self._tell_download, ev.model)
            self._download_due[ev.model] = later

    def _tell_download(self, model: str) -> None:
        self._download_due.pop(model, None)
        m = self.models.get(model)
        if m is None or m.state is not ModelState.DOWNLOADING:
            self._download_told.pop(model, None)
            return
        self._download_told[model] = time.monotonic()
        self.emit(ModelsUpdated(self.name, (m,)))

    async def model_log_tail(self, model: str, n: int = FAILURE_LOG_LINES) -> list[str]:
        """The model's own last log lines (its child's output), read from the log on the serving machine."""
        if self.manager is None:
            return []
        try:
            raw = await self.manager.log_tail(400)
            if not self.attributor.ports and self.client is not None:
                self.attributor.learn_models(await self.client.models())
        except HerdError:
            return []
        att = LogAttributor()
        att.ports.update(self.attributor.ports)
        # Without the child's relative timestamps: they say nothing to an operator and differ on every run.
        mine = [ln for ln in (att.parse(r) for r in raw) if ln.model == model]
        errors = [ln for ln in mine if ln.level == "E"]
        return [f"{ln.level} {ln.text}".strip() for ln in (errors or mine)[-n:]]

    async def _report_failure(self, model: str, exit_code: int | None) -> None:
        tail = await self.model_log_tail(model)
        msg = f"{model} failed to load on {self.name} (exit code {exit_code})"
        if tail:
            msg += "\n" + "\n".join(tail)
        # typed, so that the card keeps it only while the router lists the model as failed
        self.emit(Problem(self.name, msg, model=model, error=ModelFailed(model, exit_code, tail)))

    # ---- host stats ----

    async def _follow_stats(self) -> None:
        rss: int | None = None
        rss_of: int | None = None  # the pid `rss` was measured for
        while True:
            try:
                stats = await self.transport.host_stats()
                pid = self.view.pid if self.view.router_state is RouterState.RUNNING else None
                # The same rounds for every machine (by the clock, not by a count of its own), so that entries
                # naming one host read its process table once (hosts/shared_reads.py).
                rss_round = round_number(STATS_EVERY) % RSS_EVERY_ROUNDS == 0
                if pid is None:
                    rss, rss_of = None, None
                elif pid != rss_of or rss_round:
                    rss, rss_of = await self.transport.process_tree_rss(pid), pid
                self.emit(HostStatsChanged(self.name, stats, rss))
            except asyncio.CancelledError:
                raise
            except HerdError:
                pass  # the router follower reports an unreachable machine
            await next_round(STATS_EVERY)

    # ---- log ----

    async def _follow_log(self) -> None:
        if self.manager is None:
            return  # somebody else's router: its log is not ours to read
        while True:
            try:
                await self.transport.connect()
                path = await self.manager.log_path()
                await self._tail(path)
            except asyncio.CancelledError:
                raise
            except (HerdError, OSError):
                pass
            await asyncio.sleep(1.0)

    async def _tail(self, path: str) -> None:
        window = LogWindow(self.attributor, LOG_PARSE_PER_FLUSH)

        flusher: asyncio.TimerHandle | None = None

        def flush() -> None:
            nonlocal flusher
            flusher = None
            lines = window.take()
            if lines:
                self.logs.extend(lines)
                self.log_lines_added += len(lines)
                self.emit(LogLines(self.name, tuple(lines), upto=self.log_lines_added))

        try:
            async for chunk in self.transport.tail_chunks(path, lines=await self._lines_to_resume(path)):
                window.add(chunk)
                # Lines are sent in batches, LOG_FLUSH_EVERY after the first of them (a chatty child prints hundreds
                # a second, one event each would swamp the UI); a quiet log schedules nothing (no idle wake-ups).
                if flusher is None:
                    flusher = asyncio.get_running_loop().call_later(LOG_FLUSH_EVERY, flush)
        finally:
            if flusher is not None:
                flusher.cancel()
            flush()

    async def _lines_to_resume(self, path: str) -> int:
        """How many of the log's last lines are new to us. A remote tail ends when the ssh link drops; starting it
        again with the usual 200 lines showed up to 200 lines twice, so it resumes after the last line we have."""
        if not self.logs or self.manager is None:
            return LOG_FIRST_LINES
        last = next((ln.raw for ln in reversed(self.logs) if ln.source != SKIPPED_SOURCE), "")
        recent = await self.manager.log_tail(LOG_FIRST_LINES, path)
        for i in range(len(recent) - 1, -1, -1):
            if recent[i].rstrip("\r") == last:
                return len(recent) - 1 - i
        return LOG_FIRST_LINES

    # ---- commands ----

    async def connect_router(self) -> RouterClient:
        """For one-shot commands: a client for the running (or attached) router, without the followers."""
        await self.transport.connect()
        if self.manager is None:
            assert self.cfg.url is not None
            return await self.client_for(self.cfg.url)
        status = await self.manager.inspect()
        self._show_status(status)
        if status.state is not RouterState.RUNNING or status.record is None:
            raise RouterNotRunning(self.name, status.state, status.reason)
        return await self.client_for(f"http://127.0.0.1:{status.record.port}", status.record)

    async def router_client(self) -> RouterClient:
        """The follower's client when it has one, else a fresh look (one-shot use without followers)."""
        try:
            return self.require_client()
        except RouterError:
            return await self.connect_router()

    def require_client(self) -> RouterClient:
        if self.client is None or self.view.router_state not in (RouterState.RUNNING, RouterState.ATTACHED):
            state = self.view.router_state.value
            raise RouterNotRunning(self.name, state, self.view.router_reason if state == "not answering" else "")
        return self.client


async def _settle(tasks: Sequence[asyncio.Future[Any]], within: float) -> None:
    """Wait for tasks to end, at most `within` seconds; what they raise is theirs (they were cancelled)."""
    if not tasks:
        return
    done, _ = await asyncio.wait(tasks, timeout=within)
    for t in done:
        if not t.cancelled():
            t.exception()  # retrieved: a cancelled follower's error is not "never retrieved" noise at exit
