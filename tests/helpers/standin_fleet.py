"""A rendering stand-in with the Fleet API surface, for snapshots and widget tests.

It is not a mock of a router: it holds whatever state a test gives it and hands the events on. What the dashboard
does against a real router is covered by the pilot tests in test_pilot_router.py. It has no files and no
llama-server to look for: `has_files` is False and those methods raise NotOffered, as FleetApi allows.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Collection
from dataclasses import dataclass, field

from textual.worker import NoActiveWorker, get_current_worker

from app.config import Config
from app.services.core.errors import FitUnknown, HerdError
from app.services.core.fleet_events import (
    FleetEvent,
    HostStatsChanged,
    LogLines,
    MachineChanged,
    MachineView,
    ModelsChanged,
    ModelsUpdated,
)
from app.services.core.host_types import Connection, GpuStats, HostStats
from app.services.core.log_lines import LogLine
from app.services.core.router_types import LoadProgress, ModelInfo, ModelState, RouterState
from app.services.files.discovery import DiscoveredModel, Discovery
from app.services.fit.estimate import FitEstimate
from app.services.hosts.child_memory import ModelMemory
from app.services.presets.store import Edit, PresetPlan, PresetResult, PresetSnapshot
from app.ui.state.fleet_protocol import NotOffered

NOW = 1_760_000_000.0  # the frozen clock every snapshot renders at


@dataclass
class StandInFleet:
    views: dict[str, MachineView]
    model_lists: dict[str, tuple[ModelInfo, ...]] = field(default_factory=dict)
    logs: dict[str, tuple[LogLine, ...]] = field(default_factory=dict)
    calls: list[tuple[str, ...]] = field(default_factory=list)
    refuse: dict[str, str] = field(default_factory=dict)
    queues: list[asyncio.Queue[FleetEvent]] = field(default_factory=list)
    replay: list[FleetEvent] = field(default_factory=list)
    """Events every new subscriber gets after the current state (host stats history, log lines)."""
    config: Config = field(default_factory=Config)
    watched: list[tuple[str, ...]] = field(default_factory=list)
    """Each watch_activity call: the machines whose activity the dashboard asked for ("*": all)."""
    estimates: dict[tuple[str, str], FitEstimate | str] = field(default_factory=dict)
    """What fit_estimate answers per (machine, model): an estimate, or the reason there is none (FitUnknown)."""
    estimate_calls: list[tuple[str, str, bool]] = field(default_factory=list)
    """(machine, model, asked from a worker) per fit_estimate call: header reads stay off the UI's path."""
    has_files = False

    @property
    def has_fit(self) -> bool:
        return bool(self.estimates)  # a stand-in estimates what a test gave it, and only then

    @property
    def names(self) -> list[str]:
        return list(self.views)

    async def start(self) -> None:
        self.calls.append(("start",))

    async def close(self) -> None:
        self.calls.append(("close",))

    def subscribe(self) -> asyncio.Queue[FleetEvent]:
        q: asyncio.Queue[FleetEvent] = asyncio.Queue()
        for name, v in self.views.items():
            q.put_nowait(MachineChanged(name, v))
            q.put_nowait(ModelsChanged(name, self.model_lists.get(name, ())))
        for ev in self.replay:
            q.put_nowait(ev)
        self.queues.append(q)
        return q

    def watch_activity(self, machines: Collection[str] | None) -> None:
        self.watched.append(tuple(sorted(machines)) if machines is not None else ("*",))

    def unsubscribe(self, q: asyncio.Queue[FleetEvent]) -> None:
        if q in self.queues:
            self.queues.remove(q)

    def emit(self, *events: FleetEvent) -> None:
        for ev in events:
            if isinstance(ev, MachineChanged):
                self.views[ev.machine] = ev.view
            elif isinstance(ev, ModelsChanged):
                self.model_lists[ev.machine] = ev.models
            elif isinstance(ev, ModelsUpdated):  # a delta, as the real fleet sends for a status event
                now = {m.id: m for m in ev.models}
                known = self.model_lists.get(ev.machine, ())
                seen = {m.id for m in known}
                merged = tuple(now.get(m.id, m) for m in known) + tuple(m for m in ev.models if m.id not in seen)
                self.model_lists[ev.machine] = merged
            elif isinstance(ev, LogLines):
                self.logs[ev.machine] = self.logs.get(ev.machine, ()) + ev.lines
                ev = dataclasses.replace(ev, upto=len(self.logs[ev.machine]))  # as the real fleet counts them
            for q in self.queues:
                q.put_nowait(ev)

    def view(self, machine: str) -> MachineView:
        return self.views[machine]

    def models(self, machine: str) -> tuple[ModelInfo, ...]:
        return self.model_lists.get(machine, ())

    def log_lines(self, machine: str) -> tuple[LogLine, ...]:
        return self.logs.get(machine, ())

    def log_lines_added(self, machine: str) -> int:
        return len(self.logs.get(machine, ()))

    async def _call(self, *what: str) -> None:
        self.calls.append(what)
        if what[0] in self.refuse:
            raise HerdError(self.refuse[what[0]])

    async def load(self, machine: str, model: str) -> None:
        await self._call("load", machine, model)

    async def unload(self, machine: str, model: str) -> None:
        await self._call("unload", machine, model)

    async def reload(self, machine: str) -> None:
        await self._call("reload", machine)

    async def start_router(self, machine: str) -> None:
        await self._call("start_router", machine)

    async def stop_router(self, machine: str) -> None:
        await self._call("stop_router", machine)

    async def router_env(self, machine: str) -> dict[str, str]:
        return {"LLAMAHERD_URL": self.views[machine].url}

    def retry_now(self, machine: str) -> None:
        self.calls.append(("retry_now", machine))

    async def fit_estimate(self, machine: str, model: ModelInfo, has_gpu: bool) -> FitEstimate:
        try:
            in_worker = bool(get_current_worker())
        except NoActiveWorker:
            in_worker = False
        self.estimate_calls.append((machine, model.id, in_worker))
        answer = self.estimates.get((machine, model.id))
        if answer is None:
            raise NotOffered("the stand-in fleet has no model files")
        if isinstance(answer, str):
            raise FitUnknown(answer)
        return answer

    # ---- what a stand-in has nothing behind ----

    async def model_memory(self, machine: str) -> dict[str, ModelMemory]:
        raise NotOffered("the stand-in fleet has no processes to measure")

    async def llama_server_found(self, machine: str) -> str | None:
        raise NotOffered("the stand-in fleet has no llama-server to look for")

    async def read_preset(self, machine: str) -> PresetSnapshot:
        raise NotOffered("the stand-in fleet has no preset files")

    async def preset_known_keys(self, machine: str) -> frozenset[str]:
        raise NotOffered("the stand-in fleet has no preset files")

    async def plan_preset(self, machine: str, edit: Edit, snapshot: PresetSnapshot | None = None) -> PresetPlan:
        raise NotOffered("the stand-in fleet has no preset files")

    async def apply_preset(self, machine: str, plan: PresetPlan) -> PresetResult:
        raise NotOffered("the stand-in fleet has no preset files")

    async def discover_models(self, machine: str) -> Discovery:
        raise NotOffered("the stand-in fleet has no model files")

    async def new_section(self, machine: str, model: DiscoveredModel) -> dict[str, str]:
        raise NotOffered("the stand-in fleet has no model files")

    async def file_estimate(self, machine: str, model: DiscoveredModel, has_gpu: bool) -> FitEstimate:
        raise NotOffered("the stand-in fleet has no model files")


# ---- a small, believable fleet ----

GB = 1024**3


def model(mid: str, state: ModelState, **kw: object) -> ModelInfo:
    return ModelInfo(id=mid, state=state, **kw)  # type: ignore[arg-type]


def workstation_models() -> tuple[ModelInfo, ...]:
    return (
        model(
            "qwen2.5-coder-14b",
            ModelState.LOADED,
            n_ctx=32768,
            size=9 * GB,
            n_params=14_770_000_000,
            aliases=("coder",),
            tags=("code",),
            source="preset",
        ),
        model(
            "gemma-3-4b-it",
            ModelState.LOADING,
            progress=LoadProgress(("text_model", "mmproj_model"), "text_model", 0.42),
            input_modalities=("text", "image"),
            n_ctx=8192,
            size=3 * GB,
            n_params=3_880_000_000,
            source="preset",
        ),
        model("llama-3.2-3b", ModelState.SLEEPING, n_ctx=4096, size=2 * GB, n_params=3_210_000_000, source="preset"),
        model("mistral-7b", ModelState.UNLOADED, size=4 * GB, n_params=7_240_000_000, tags=("chat",), source="preset"),
        model(
            "broken",
            ModelState.UNLOADED,
            exit_code=1,
            failed=True,
            size=1024,
            source="preset",
        ),
    )


def gpubox_models() -> tuple[ModelInfo, ...]:
    return (
        model(
            "llama-3.3-70b",
            ModelState.LOADED,
            n_ctx=16384,
            size=40 * GB,
            n_params=70_550_000_000,
            source="preset",
        ),
        model("phi-4", ModelState.UNLOADED, size=8 * GB, n_params=14_660_000_000, source="cache"),
    )


def view(name: str, host: str = "local", **kw: object) -> MachineView:
    defaults: dict[str, object] = dict(
        connection=Connection.LOCAL if host == "local" else Connection.CONNECTED,
        router_state=RouterState.RUNNING,
        pid=4242,
        port=8080,
        url="http://127.0.0.1:8080",
        started_at=NOW - 3 * 3600 - 7 * 60,
        stream="sse",
    )
    defaults.update(kw)
    return MachineView(name=name, host=host, **defaults)  # type: ignore[arg-type]


def sample_logs() -> tuple[LogLine, ...]:
    return (
        LogLine(raw="", text="main: server is listening on http://127.0.0.1:8080", level="I", source="router"),
        LogLine(
            raw="",
            text="spawning server instance with name=qwen2.5-coder-14b on port 40011",
            source="router",
            model="qwen2.5-coder-14b",
        ),
        LogLine(
            raw="",
            text="srv  load_model: loading model 'qwen2.5-coder-14b.gguf'",
            source="child",
            port=40011,
            model="qwen2.5-coder-14b",
        ),
        LogLine(raw="", text="srv  load_model: model loaded", source="child", port=40011, model="qwen2.5-coder-14b"),
        LogLine(
            raw="",
            text="W kv cache: n_ctx_seq (4096) < n_ctx_train (131072)",
            level="W",
            source="child",
            port=40012,
            model="gemma-3-4b-it",
        ),
        LogLine(
            raw="", text="gguf_init_from_file_impl: failed to read magic", source="child", port=40013, model="broken"
        ),
        LogLine(
            raw="",
            text="srv  load_model: failed to load model 'broken.gguf'",
            level="E",
            source="child",
            port=40013,
            model="broken",
        ),
        LogLine(raw="", text="instance name=broken exited with status 1", source="router", model="broken"),
    )


CPU_WAVE = (12, 15, 22, 35, 48, 61, 72, 80, 77, 64, 50, 41, 33, 30, 28, 34, 45, 58, 66, 59, 47, 38, 31, 34)


def stats_history() -> list[FleetEvent]:
    out: list[FleetEvent] = []
    for i, cpu in enumerate(CPU_WAVE):
        out.append(
            HostStatsChanged(
                "workstation",
                HostStats(
                    cpu_pct=float(cpu),
                    mem_used=21 * GB,
                    mem_total=62 * GB,
                    load_avg=(1.2, 0.9, 0.8),
                    gpus=(GpuStats("RTX 4090", 14_000, 24_564, 61.0),),
                ),
            )
        )
        out.append(
            HostStatsChanged(
                "gpu-box",
                HostStats(
                    cpu_pct=float(CPU_WAVE[(i * 7) % len(CPU_WAVE)]) / 3,
                    mem_used=101 * GB,
                    mem_total=125 * GB,
                    load_avg=(0.3, 0.2, 0.2),
                    gpus=(GpuStats("A6000", 44_000, 49_140, 12.0), GpuStats("A6000", 3_000, 49_140, 0.0)),
                ),
            )
        )
    return out


def demo_fleet() -> StandInFleet:
    return StandInFleet(
        views={
            "workstation": view("workstation"),
            "gpu-box": view("gpu-box", host="gpu-box.lan", port=39001, started_at=NOW - 5 * 86400 - 2 * 3600),
            "laptop": view(
                "laptop",
                host="laptop.lan",
                connection=Connection.UNREACHABLE,
                connection_reason="connection refused",
                router_state=RouterState.UNKNOWN,
            ),
        },
        model_lists={"workstation": workstation_models(), "gpu-box": gpubox_models(), "laptop": ()},
        logs={"workstation": sample_logs()},
        replay=stats_history(),
    )
