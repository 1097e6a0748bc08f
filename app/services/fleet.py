"""The one object the UI and the CLI hold: every configured machine, one event stream, awaitable commands."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import sqlite3
from collections.abc import AsyncGenerator, Callable, Collection, Sequence

from app.config import Config, MachineConfig
from app.errors import ConfigError
from app.services.activity.poll import ActivityChanged, ActivityPoller, Target, machine_target
from app.services.ask.answer import Answer, Piece, ask
from app.services.ask.conversation import Conversation
from app.services.ask.probe_timer import ProbeTimer
from app.services.core.errors import FitUnknown, HerdError, RouterError
from app.services.core.fleet_events import FleetEvent, LogLines, MachineChanged, MachineView, ModelsChanged, Problem
from app.services.core.log_lines import LogLine
from app.services.core.router_types import ModelInfo, ModelProps
from app.services.files import scan as model_files
from app.services.files.discovery import DiscoveredModel, Discovery
from app.services.fit.check import estimate_model, estimate_section
from app.services.fit.estimate import FitEstimate, FitInputError
from app.services.history.downloads import pull_row, record, removal_row
from app.services.history.store import HistoryStore
from app.services.hosts.child_memory import ModelMemory
from app.services.hub.hub_api import RepoHit
from app.services.hub.progress import PullProgress
from app.services.hub.pull import PullOutcome
from app.services.hub.pulls import Pulls, machine_events
from app.services.hub.remove import Removal, remove
from app.services.hub.search import RepoChoices, repo_choices, search_repos
from app.services.lifecycle.manager import RouterRecord
from app.services.logs.parse import skipped_marker
from app.services.machine.machine import Machine
from app.services.machine.model_memory import model_memory
from app.services.presets.store import Edit, PresetPlan, PresetResult, PresetSnapshot, PresetStore
from app.services.router.client import RouterClient
from app.services.router.load_and_wait import LOAD_TIMEOUT, ensure_loaded

# Bound: log lines kept per machine (packed, logs/scrollback.py), replayed into the panel when it is selected again
# (the panel's own scrollback, ui.log_lines, may be longer: it holds the selected machine's lines only).
MACHINE_LOG_LINES = 10_000
# Bound: LogLines events waiting in one subscriber's queue (each at most ~500 lines, one per machine per 0.1 s);
# a subscriber that falls further behind loses log lines, never state.
LOG_BACKLOG = 100


class Fleet:
    has_files = True
    """Every machine's preset and model files are reached through its transport (the UI's FleetApi asks)."""
    has_fit = True
    """Fit estimates read the models' headers through the same transports."""

    def __init__(self, config: Config) -> None:
        self.config = config
        machines = config.effective_machines
        self._machines: dict[str, Machine] = {
            m.name: Machine(m, self._emit, log_capacity=min(config.ui.log_lines, MACHINE_LOG_LINES)) for m in machines
        }
        self.names: list[str] = list(self._machines)
        self._subscribers: list[asyncio.Queue[FleetEvent]] = []
        self._dropped: dict[int, int] = {}  # log lines not queued, per subscriber: one entry per subscriber
        self._started = False
        # Where a request this llamaherd makes is noted, so the history can say who asked (None: not noted).
        self.history: HistoryStore | None = None
        self.asked_by = "llamaherd"
        self.pulls = Pulls()  # downloads under way (hub/), several at once on several machines
        self.activity = ActivityPoller(self._activity_targets, self._emit, every=config.ui.activity_every)
        # issue 35: the opt-in one-token probe of idle loaded models ([ui] probe_every; 0: none)
        self.prober = ProbeTimer(lambda: list(self._machines.values()), self.activity, config.ui.probe_every)

    def _activity_targets(self) -> list[Target]:
        return [t for m in self._machines.values() if (t := machine_target(m)) is not None]

    async def _asked(self, machine: str, model: str, action: str) -> None:
        if self.history is not None:
            with contextlib.suppress(sqlite3.Error, OSError):  # a history that cannot be written stops nothing
                await self.history.note_request(machine, model, action, self.asked_by)

    def watch_activity(self, machines: Collection[str] | None) -> None:
        """Poll the activity of these machines only (None: all); the others' figures are withdrawn."""
        self.activity.only = None if machines is None else frozenset(machines)

    # ---- events ----

    def _emit(self, ev: FleetEvent) -> None:
        for q in self._subscribers:
            if isinstance(ev, ActivityChanged) and q.qsize() >= LOG_BACKLOG:
                continue  # the next round replaces these figures: a subscriber that fell behind skips them
            if isinstance(ev, LogLines) and q.qsize() >= LOG_BACKLOG:
                # A subscriber that stopped reading: its log lines are dropped (counted in a marker sent when it
                # reads again), so the queue cannot grow with the log. State events always go through.
                self._dropped[id(q)] = self._dropped.get(id(q), 0) + len(ev.lines)
                continue
            if isinstance(ev, LogLines) and id(q) in self._dropped:
                marker = skipped_marker(self._dropped.pop(id(q)))
                q.put_nowait(LogLines(ev.machine, (marker, *ev.lines), upto=ev.upto))
            else:
                q.put_nowait(ev)

    def subscribe(self) -> asyncio.Queue[FleetEvent]:
        """A queue of every event from now on, starting with the current state of each machine."""
        q: asyncio.Queue[FleetEvent] = asyncio.Queue()
        for m in self._machines.values():
            q.put_nowait(MachineChanged(m.name, m.view))
            q.put_nowait(ModelsChanged(m.name, tuple(m.models.values())))
        self._subscribers.append(q)
        return q

    def unsubscribe(self, q: asyncio.Queue[FleetEvent]) -> None:
        with contextlib.suppress(ValueError):
            self._subscribers.remove(q)
        self._dropped.pop(id(q), None)

    # ---- lifecycle ----

    async def start(self) -> None:
        """Begin following every machine, each in its own tasks; returns at once."""
        if self._started:
            return
        self._started = True
        for m in self._machines.values():
            m.start()
        self.activity.start()
        self.prober.start()

    async def close(self) -> None:
        """Stop following. Routers keep running: they outlive the dashboard."""
        await self.prober.stop()
        await self.activity.stop()
        await asyncio.gather(*(m.close() for m in self._machines.values()), return_exceptions=True)
        self._started = False

    # ---- queries ----

    def machine(self, name: str) -> Machine:
        try:
            return self._machines[name]
        except KeyError:
            raise ConfigError(f"no machine named {name!r} (known: {', '.join(self.names)})") from None

    def view(self, machine: str) -> MachineView:
        return self.machine(machine).view

    def models(self, machine: str) -> tuple[ModelInfo, ...]:
        return tuple(self.machine(machine).models.values())

    def log_lines(self, machine: str) -> Sequence[LogLine]:
        """The machine's scrollback itself, not a copy (10,000 lines unpacked): read it, do not keep it."""
        return self.machine(machine).logs

    def log_lines_added(self, machine: str) -> int:
        """How many lines the machine has ever added to its scrollback (compare with LogLines.upto)."""
        return self.machine(machine).log_lines_added

    # ---- commands ----

    async def load(self, machine: str, model: str) -> None:
        """Ask; progress and the outcome arrive as events (a failure as a Problem with the model's log lines)."""
        m = self.machine(machine)
        await self._asked(machine, model, "load")
        try:
            await (await m.router_client()).load(model)
        except RouterError as e:
            action = f"load {model} on {machine}"
            self._emit(Problem(machine, f"{action}: {e}", model=model, action=action, error=e))
            raise

    async def load_and_wait(self, machine: str, model: str, timeout: float = LOAD_TIMEOUT) -> ModelInfo | None:
        m = self.machine(machine)
        return await ensure_loaded(await m.router_client(), model, timeout=timeout, log_tail=m.model_log_tail)

    async def ask(
        self, machine: str, conv: Conversation, vision: bool | None, max_tokens: int, load_first: bool = False
    ) -> AsyncGenerator[Piece | Answer, None]:
        """A streamed answer (ask/answer.py); `load_first`: the operator agreed to load the model before asking."""
        if load_first:
            await self._asked(machine, conv.model, "load")
            await self.load_and_wait(machine, conv.model)
        client = await self.machine(machine).router_client()
        async with contextlib.aclosing(ask(client, conv, vision, max_tokens=max_tokens)) as answer:
            async for item in answer:
                yield item

    async def unload(self, machine: str, model: str) -> None:
        await self._asked(machine, model, "unload")
        try:
            if (machine, model) in self.pulls.running():  # `u` on a downloading row: the pull followed here cancels
                await self.pulls.cancel(self.machine(machine), model)
                return
            await (await self.machine(machine).router_client()).unload(model)
        except RouterError as e:
            action = f"unload {model} on {machine}"
            self._emit(Problem(machine, f"{action}: {e}", model=model, action=action, error=e))
            raise

    async def reload(self, machine: str) -> None:
        await (await self.machine(machine).router_client()).reload()

    async def model_props(self, machine: str, model: str) -> ModelProps:
        return await (await self.machine(machine).router_client()).model_props(model)

    async def model_memory(self, machine: str) -> dict[str, ModelMemory]:
        """Each running model's child RSS and GPU memory (one command on the machine), or why not known."""
        return await model_memory(self.machine(machine))

    async def start_router(self, machine: str) -> RouterRecord:
        m = self.machine(machine)
        if m.manager is None:
            raise RouterError(f"{machine} is attach-only (url = {m.cfg.url}): llamaherd does not start its router")
        await self._asked(machine, "", "start")
        try:
            rec, _ = await m.manager.start()
        except HerdError as e:
            action = f"start router on {machine}"
            self._emit(Problem(machine, f"{action}: {e}", action=action, error=e))
            raise
        finally:
            m.poke()
        return rec

    async def llama_server_found(self, machine: str) -> str | None:
        """The llama-server a start on that machine would run, or None when there is none to be found there."""
        m = self.machine(machine)
        if m.manager is None:
            return None
        try:
            program = await m.manager.program()
        except HerdError:
            return None
        if not m.transport.is_local and "/" not in program:
            r = await m.transport.run(["sh", "-c", 'command -v "$1"', "sh", program])
            found = r.stdout.decode().strip()
            return found if r.ok and found else None
        return program if await m.transport.stat(program) is not None else None

    async def fit_estimate(self, machine: str, model: ModelInfo, has_gpu: bool) -> FitEstimate:
        """The memory estimate of one of the machine's models under its rendered arguments (a header read)."""
        try:
            return await estimate_model(self.machine(machine), model, has_gpu)
        except (FitInputError, OSError) as e:
            raise FitUnknown(str(e) or type(e).__name__) from e

    async def file_estimate(self, machine: str, model: DiscoveredModel, has_gpu: bool) -> FitEstimate:
        """The estimate for a model file not in the preset yet, under the section the files screen would add."""
        try:
            section = await self.new_section(machine, model)
            return await estimate_section(self.machine(machine), section, has_gpu)
        except (FitInputError, OSError) as e:
            raise FitUnknown(str(e) or type(e).__name__) from e

    # ---- presets and model files (the editor drives these) ----

    async def client(self, machine: str) -> RouterClient:
        return await self.machine(machine).router_client()

    def presets(self, machine: str) -> PresetStore:
        return PresetStore(self.machine(machine))

    async def read_preset(self, machine: str) -> PresetSnapshot:
        return await self.presets(machine).read()

    async def preset_known_keys(self, machine: str) -> frozenset[str]:
        return await self.presets(machine).known_keys()

    async def plan_preset(self, machine: str, edit: Edit, snapshot: PresetSnapshot | None = None) -> PresetPlan:
        return await self.presets(machine).plan(edit, snapshot)

    async def apply_preset(self, machine: str, plan: PresetPlan) -> PresetResult:
        return await self.presets(machine).apply(plan)

    async def discover_models(self, machine: str) -> Discovery:
        m = self.machine(machine)
        return await model_files.scan(m.transport, m.cfg.models_dirs)

    async def new_section(self, machine: str, model: DiscoveredModel) -> dict[str, str]:
        return await model_files.new_section(self.machine(machine).transport, model)

    # ---- the hub (hub/): search from here, pull through the router's download child, rm ----

    async def hub_search(self, machine: str, query: str) -> list[RepoHit]:
        return await search_repos(self.machine(machine).cfg, query)

    async def hub_repo(self, machine: str, repo: str) -> RepoChoices:
        return await repo_choices(self.machine(machine), repo)

    async def pull(
        self, machine: str, spec: str, on_progress: Callable[[PullProgress], None] | None = None
    ) -> PullOutcome:
        """Pull to its outcome; a failure is also a Problem (the cause in one line) and a history row."""
        m = self.machine(machine)
        await self._asked(machine, spec, "pull")
        events = functools.partial(machine_events, self.subscribe, self.unsubscribe, machine)
        outcome = await self.pulls.run(m, spec, on_progress=on_progress, events=lambda _client: events())
        if not outcome.already and self.history is not None:
            model = outcome.model or outcome.requested
            await record([pull_row(m.cfg, model, outcome.ok, outcome.cause, self.asked_by)], self.history)
        if not outcome.ok and not outcome.cancelled:  # a cancel on request is no problem
            action = f"pull {outcome.requested} on {machine}"
            self._emit(Problem(machine, f"{action}: {outcome.cause}", model=outcome.requested, action=action))
        return outcome

    async def cancel_pull(self, machine: str, name: str) -> None:
        await self.pulls.cancel(self.machine(machine), name)

    async def remove_model(self, machine: str, model: str) -> Removal:
        m = self.machine(machine)
        await self._asked(machine, model, "rm")
        done = await remove(m, model)
        if self.history is not None:
            await record([removal_row(m.cfg, done.model, done.line(), self.asked_by)], self.history)
        return done

    async def router_env(self, machine: str) -> dict[str, str]:
        """For a hook's or a plugin's environment: a URL that reaches the machine's router from here (the tunnel for
        an ssh machine) and its key. Never put on a command line."""
        client = await self.client(machine)
        env = {"LLAMAHERD_URL": client.base_url}
        if client.api_key:
            env["LLAMAHERD_API_KEY"] = client.api_key
        return env

    def add_machine(self, machine: MachineConfig) -> None:
        """A machine added while running (the dashboard's form wrote it to the config file): followed from now on as
        the configured ones are, its state sent to every subscriber. A name already in the fleet is refused."""
        if machine.name in self._machines:
            raise ConfigError(f"there is already a machine named {machine.name!r}")
        m = Machine(machine, self._emit, log_capacity=min(self.config.ui.log_lines, MACHINE_LOG_LINES))
        self._machines[machine.name] = m
        self.names.append(machine.name)
        self.config = dataclasses.replace(self.config, machines=(*self.config.effective_machines, machine))
        self._emit(MachineChanged(m.name, m.view))
        self._emit(ModelsChanged(m.name, tuple(m.models.values())))
        if self._started:
            m.start()

    def retry_now(self, machine: str) -> None:
        """Wake the machine's follower: it connects (an ssh connect skips its backoff wait) and looks at its router
        now. Nothing is lost by asking often: a machine that is up just looks once more."""
        self.machine(machine).poke()

    async def stop_router(self, machine: str) -> None:
        m = self.machine(machine)
        if m.manager is None:
            raise RouterError(f"{machine} is attach-only: llamaherd does not stop somebody else's router")
        await self._asked(machine, "", "stop")
        try:
            await m.manager.stop()
        finally:
            m.poke()
