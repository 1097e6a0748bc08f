"""What the metrics read of a fleet: the Fleet (services/fleet.py) has it all; a Protocol keeps this room below it."""

from __future__ import annotations

import asyncio
from typing import Protocol

from app.services.core.fleet_events import FleetEvent, MachineView
from app.services.core.router_types import ModelInfo


class FleetState(Protocol):
    @property
    def names(self) -> list[str]: ...

    def view(self, machine: str) -> MachineView: ...

    def models(self, machine: str) -> tuple[ModelInfo, ...]: ...

    def subscribe(self) -> asyncio.Queue[FleetEvent]: ...

    def unsubscribe(self, q: asyncio.Queue[FleetEvent]) -> None: ...
