"""What the dashboard needs of app.services.fleet.Fleet, as a Protocol: all of it, with no optional parts.

The UI is typed against this rather than the class so it has no import-time dependency on the service layer's
internals, and so snapshot tests can drive it with a small rendering stand-in of the same shape. A fleet that
cannot reach the machines' files says so with `has_files`; its file methods, and any other part it has nothing
for, raise NotOffered, which the UI treats like any other refusal of the fleet.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Mapping, Sequence
from typing import Protocol

from app.config import Config
from app.services.core.errors import HerdError
from app.services.core.fleet_events import FleetEvent, MachineView
from app.services.core.log_lines import LogLine
from app.services.core.router_types import ModelInfo
from app.services.files.discovery import DiscoveredModel, Discovery
from app.services.fit.estimate import FitEstimate
from app.services.hosts.child_memory import ModelMemory
from app.services.presets.store import Edit, PresetPlan, PresetResult, PresetSnapshot


class NotOffered(HerdError):
    """This fleet has nothing behind the part asked for (a rendering stand-in has no files and no llama-server)."""


class FleetApi(Protocol):
    @property
    def names(self) -> list[str]: ...

    @property
    def config(self) -> Config: ...

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    def subscribe(self) -> asyncio.Queue[FleetEvent]: ...

    def unsubscribe(self, q: asyncio.Queue[FleetEvent]) -> None: ...

    def view(self, machine: str) -> MachineView: ...

    def models(self, machine: str) -> tuple[ModelInfo, ...]: ...

    def log_lines(self, machine: str) -> Sequence[LogLine]: ...

    def log_lines_added(self, machine: str) -> int:
        """How many lines the machine has ever added to its scrollback (LogLines.upto counts the same)."""
        ...

    def watch_activity(self, machines: Collection[str] | None) -> None:
        """Poll the live activity of these machines only (None: every machine)."""
        ...

    # ---- commands ----

    async def load(self, machine: str, model: str) -> object: ...

    async def unload(self, machine: str, model: str) -> object: ...

    async def reload(self, machine: str) -> object: ...

    async def start_router(self, machine: str) -> object: ...

    async def stop_router(self, machine: str) -> object: ...

    async def router_env(self, machine: str) -> dict[str, str]:
        """LLAMAHERD_URL (reaching the machine's router from here) and LLAMAHERD_API_KEY, for a plugin's environment."""
        ...

    def retry_now(self, machine: str) -> None:
        """Try that machine's link and router again at once, rather than when its reconnect backoff ends."""

    async def llama_server_found(self, machine: str) -> str | None:
        """Before any start: the llama-server a start on that machine would run, or None when there is none.

        Looking for the binary is file work, so the UI never does it itself. A fleet that cannot look raises
        NotOffered; the UI then learns the answer from the refusal of a start (a ProgramNotFound).
        """
        ...

    @property
    def has_fit(self) -> bool:
        """Whether fit_estimate can answer at all (it reads model headers). When False the dashboard makes no
        estimate: verdicts say "fit unknown" and `l` decides on what it knows without one."""
        ...

    async def model_memory(self, machine: str) -> Mapping[str, ModelMemory]:
        """Each running model's child RSS and GPU memory, read on the machine (so the UI asks in a worker); an
        entry without figures says why they are not known (an attached router). NotOffered where nothing is."""
        ...

    async def fit_estimate(self, machine: str, model: ModelInfo, has_gpu: bool) -> FitEstimate:
        """The model's memory estimate under its rendered arguments: a header read on the machine, so the UI
        asks for it in a worker. Raises FitUnknown (a HerdError) when it cannot be made; NotOffered likewise."""
        ...

    # ---- files: the preset editor and the model files screen ----

    @property
    def has_files(self) -> bool:
        """Whether the machines' preset and model files can be read and written through this fleet. When False,
        the preset editor and the model files screen are not offered, and the methods below raise NotOffered."""
        ...

    async def read_preset(self, machine: str) -> PresetSnapshot: ...

    async def preset_known_keys(self, machine: str) -> frozenset[str]: ...

    async def plan_preset(self, machine: str, edit: Edit, snapshot: PresetSnapshot | None = None) -> PresetPlan: ...

    async def apply_preset(self, machine: str, plan: PresetPlan) -> PresetResult: ...

    async def discover_models(self, machine: str) -> Discovery: ...

    async def new_section(self, machine: str, model: DiscoveredModel) -> dict[str, str]: ...

    async def file_estimate(self, machine: str, model: DiscoveredModel, has_gpu: bool) -> FitEstimate: ...
