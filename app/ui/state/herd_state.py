"""What the dashboard knows of each machine, folded from FleetEvents. Pure: no widgets, no I/O.

The worker that reads the fleet's queue applies events here and learns what became stale; widgets render from it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from app.services.activity.metrics import ModelActivity
from app.services.activity.poll import ActivityChanged
from app.services.core.errors import (
    HerdError,
    ModelFailed,
    ProgramNotFound,
    RouterNotRunning,
    RouterUnreachable,
    TransportError,
)
from app.services.core.fleet_events import (
    FleetEvent,
    HostStatsChanged,
    LogLines,
    MachineChanged,
    MachineView,
    ModelsChanged,
    ModelsUpdated,
    Problem,
)
from app.services.core.host_types import Connection, HostStats
from app.services.core.log_lines import LogLine
from app.services.core.router_types import ModelInfo, ModelState, RouterState

CPU_WINDOW = 60.0  # seconds of CPU history behind the sparkline
CPU_SAMPLES = 120  # hard cap, whatever the sampling rate
# Host stats arrive every 2 s; older than this they are shown dimmed with their age, never as live. A link lost
# silently (packets dropped) delivers nothing at all until the ssh keepalives give up.
STATS_STALE_AFTER = 5.0


@dataclass
class MachineState:
    view: MachineView
    by_id: dict[str, ModelInfo] = field(default_factory=dict)
    """The router's models by id, in its list's order: a delta replaces one entry (see ModelsUpdated)."""
    _models: tuple[ModelInfo, ...] | None = None
    version: int = 0
    """Counts changes of the models: what is worked out from them is remembered until it moves."""
    _running: int = 0
    stats: HostStats | None = None
    router_rss: int | None = None
    stats_at: float | None = None
    """When the last host stats arrived (the clock the UI renders with)."""
    cpu: deque[tuple[float, float]] = field(default_factory=lambda: deque(maxlen=CPU_SAMPLES))
    problem: str = ""
    """The last failure, kept in view until what failed works again (a toast alone scrolls away)."""
    problem_model: str | None = None
    problem_cause: tuple[Connection, RouterState] | None = None
    """For a failure the router's or the machine's state caused (not running, unreachable): that state, as the view
    had it when the failure came. Cleared when the router works again in another state than that one, whichever
    model the failure named (`load X: the router is not running` outlived the router's restart by minutes)."""
    problem_failed_model: bool = False
    """The failure is the model's own (it failed to load): cleared once the router no longer lists it as failed
    (a reload lists it unloaded again), not only when it loads."""
    missing_program: bool = False
    """A start was refused for want of llama-server: the machines pane says how to get one until a router runs."""
    activity: dict[str, ModelActivity] = field(default_factory=dict)
    """The last polling round's figures of the loaded models, by model id."""
    activity_hint: str | None = None
    """How to get figures from a router without --metrics; told once (see take_hints)."""
    not_answering: frozenset[str] = frozenset()
    """Loaded models whose own endpoints stopped answering (the activity poll's /metrics, the opt-in probe)."""
    untold_not_answering: list[str] = field(default_factory=list)
    """Models newly not answering, to be told once (take_not_answering)."""
    hint_told: bool = False

    @property
    def models(self) -> tuple[ModelInfo, ...]:
        """The models as a tuple, made again only after a change (read by every paint)."""
        if self._models is None:
            self._models = tuple(self.by_id.values())
        return self._models

    @models.setter
    def models(self, models: tuple[ModelInfo, ...]) -> None:
        self.by_id = {m.id: m for m in models}
        self._models = None
        self.version += 1
        self._running = sum(1 for m in self.by_id.values() if m.state.running)

    def update_models(self, models: tuple[ModelInfo, ...]) -> None:
        """A delta: these models as they are now; the others unchanged (a model not seen yet is added)."""
        for m in models:
            old = self.by_id.get(m.id)
            self._running += m.state.running - (old is not None and old.state.running)
            self.by_id[m.id] = m
        self._models = None
        self.version += 1

    def cpu_history(self, now: float) -> list[float]:
        return [pct for t, pct in self.cpu if now - t <= CPU_WINDOW]

    def stats_age(self, now: float) -> float | None:
        """How old the shown host stats are when they are stale; None while they are fresh (or absent)."""
        if self.stats is None or self.stats_at is None:
            return None
        age = now - self.stats_at
        return age if age > STATS_STALE_AFTER else None

    def running_count(self) -> int:
        """How many models run (the title asks on every paint): counted on a whole list, kept by each delta."""
        return self._running

    def running_models(self) -> list[str]:
        return [m.id for m in self.models if m.state.running]


@dataclass(frozen=True)
class Changes:
    """Which parts of the screen an applied batch of events made stale."""

    cards: frozenset[str] = frozenset()
    models: frozenset[str] = frozenset()
    """Machines some of whose models (or their activity) changed."""
    logs: tuple[tuple[str, tuple[LogLine, ...], int], ...] = ()  # machine, lines, LogLines.upto
    problems: tuple[Problem, ...] = ()
    rows: frozenset[tuple[str, str]] = frozenset()
    """(machine, model) of the rows a delta changed; a machine in `models` but not in `whole` needs just these."""
    whole: frozenset[str] = frozenset()
    """Machines whose whole list arrived (a list read): their tables are reconciled row by row."""

    def __bool__(self) -> bool:
        return bool(self.cards or self.models or self.logs or self.problems)

    def merge(self, other: Changes) -> Changes:
        return Changes(
            cards=self.cards | other.cards,
            models=self.models | other.models,
            logs=self.logs + other.logs,
            problems=self.problems + other.problems,
            rows=self.rows | other.rows,
            whole=self.whole | other.whole,
        )

    def rows_of(self, machine: str) -> frozenset[str] | None:
        """The model ids to repaint on `machine`; None: all of them."""
        if machine in self.whole:
            return None
        return frozenset(model for m, model in self.rows if m == machine)


def _placeholder(name: str) -> MachineView:
    return MachineView(name=name, host="", connection=Connection.CONNECTING)


class HerdState:
    def __init__(self, names: list[str]) -> None:
        self.machines: dict[str, MachineState] = {n: MachineState(view=_placeholder(n)) for n in names}

    @property
    def names(self) -> list[str]:
        return list(self.machines)

    def get(self, name: str) -> MachineState:
        st = self.machines.get(name)
        if st is None:
            st = self.machines[name] = MachineState(view=_placeholder(name))
        return st

    def apply(self, events: list[FleetEvent], now: float) -> Changes:
        cards: set[str] = set()
        models: set[str] = set()
        rows: set[tuple[str, str]] = set()
        whole: set[str] = set()
        logs: list[tuple[str, tuple[LogLine, ...], int]] = []
        problems: list[Problem] = []
        for ev in events:
            st = self.get(ev.machine)
            if isinstance(ev, MachineChanged):
                st.view = ev.view
                if st.problem and st.problem_model is None and _healthy(ev.view):
                    st.problem = ""
                cause = st.problem_cause
                if st.problem and cause is not None and _healthy(ev.view) and cause != _state_of(ev.view):
                    st.problem, st.problem_model, st.problem_cause = "", None, None
                if _healthy(ev.view):
                    st.missing_program = False
                cards.add(ev.machine)
            elif isinstance(ev, ModelsChanged | ModelsUpdated):
                # A download's progress (several a second) moves its row only: the card's counts stay the same
                progress_only = isinstance(ev, ModelsUpdated) and all(
                    m.state is ModelState.DOWNLOADING and m.id in st.by_id for m in ev.models
                )
                if isinstance(ev, ModelsChanged):
                    st.models = ev.models
                    whole.add(ev.machine)
                else:
                    st.update_models(ev.models)
                    rows.update((ev.machine, m.id) for m in ev.models)
                if st.problem_model is not None:
                    m = st.by_id.get(st.problem_model)
                    moved_on = st.problem_failed_model and m is not None and not _failed(m)
                    if m is None or m.state in (ModelState.LOADED, ModelState.LOADING) or moved_on:
                        st.problem, st.problem_model = "", None
                models.add(ev.machine)
                if not progress_only:
                    cards.add(ev.machine)
            elif isinstance(ev, HostStatsChanged):
                st.stats = ev.stats
                st.router_rss = ev.router_rss
                st.stats_at = now
                st.cpu.append((now, ev.stats.cpu_pct))
                cards.add(ev.machine)
            elif isinstance(ev, LogLines):
                logs.append((ev.machine, ev.lines, ev.upto))
            elif isinstance(ev, ActivityChanged):
                before, st.activity = st.activity, {a.model: a for a in ev.models}
                # Only the rows whose figures changed (loaded models; a model that stopped loses its figures).
                rows.update((ev.machine, k) for k in before.keys() | st.activity.keys()
                            if before.get(k) != st.activity.get(k))  # fmt: skip
                st.activity_hint = ev.hint
                silent = frozenset(ev.not_answering)
                if silent != st.not_answering:  # issue 35: the rows and the card say "not answering"
                    rows.update((ev.machine, k) for k in silent ^ st.not_answering)
                    st.untold_not_answering += sorted(silent - st.not_answering)
                    st.not_answering = silent
                models.add(ev.machine)
                cards.add(ev.machine)
            elif isinstance(ev, Problem):
                self.note_problem(ev.machine, ev.message, ev.model, action=ev.action, error=ev.error)
                problems.append(ev)
                cards.add(ev.machine)
        return Changes(
            frozenset(cards), frozenset(models), tuple(logs), tuple(problems), frozenset(rows), frozenset(whole)
        )

    def take_not_answering(self) -> list[tuple[str, str]]:
        """(machine, model) for each model newly not answering, once."""
        out = []
        for name, st in self.machines.items():
            out += [(name, model) for model in st.untold_not_answering if model in st.not_answering]
            st.untold_not_answering.clear()
        return out

    def take_hints(self) -> list[tuple[str, str]]:
        """(machine, hint) for each machine whose router has no metrics and has not been told so yet."""
        out = []
        for name, st in self.machines.items():
            if st.activity_hint and not st.hint_told:
                st.hint_told = True
                out.append((name, st.activity_hint))
        return out

    def note_problem(
        self, machine: str, message: str, model: str | None = None, *, action: str = "", error: HerdError | None = None
    ) -> None:
        """Keep the first line of `message` on the card; `action` and `error` (what was done, the typed failure)
        let a known failure be worded here instead."""
        st = self.get(machine)
        first = message.strip().splitlines()[0] if message.strip() else "failed"
        if isinstance(error, ProgramNotFound):
            # The how-to is several lines; the card says what is wrong and the pane's hint says the rest.
            st.missing_program = True
            first = f"{action}: {error.program} was not found" if action else f"{error.program} was not found"
        st.problem = first.replace(f" on {machine}", "")  # the card is the machine already
        if isinstance(error, ModelFailed) and error.log_tail:
            # The child's own last error line says why ("... model is corrupted or incomplete"): on the card, in
            # full when it is selected, where the log panel cuts it at its edge.
            key = next((ln for ln in reversed(error.log_tail) if ln.startswith("E ")), error.log_tail[-1])
            st.problem += f": {key.removeprefix('E ').strip()}"
        st.problem_model = model
        caused_by_state = isinstance(error, RouterNotRunning | RouterUnreachable | TransportError)
        st.problem_cause = _state_of(st.view) if caused_by_state else None
        st.problem_failed_model = isinstance(error, ModelFailed)


def _state_of(v: MachineView) -> tuple[Connection, RouterState]:
    return v.connection, v.router_state


def _failed(m: ModelInfo) -> bool:
    return m.failed or m.state is ModelState.FAILED


def _healthy(v: MachineView) -> bool:
    return v.connection is not Connection.UNREACHABLE and v.router_state in (
        RouterState.RUNNING,
        RouterState.ATTACHED,
    )
