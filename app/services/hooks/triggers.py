"""From fleet events to situations: a named state of one machine (or one of its models) that begins and ends.

A situation begins on a change, never on the first look: a dashboard that starts beside a model that failed an hour
ago runs no hook for it (its history already has it). Pure: the runner feeds events in and gets what began and ended.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from app.services.core.fleet_events import (
    AnsweringChanged,
    FleetEvent,
    MachineChanged,
    MachineView,
    ModelsChanged,
    ModelsUpdated,
)
from app.services.core.host_types import Connection
from app.services.core.router_types import ModelInfo, ModelState, RouterState

MODEL_FAILED = "model_failed"
MODEL_NOT_ANSWERING = "model_not_answering"
MACHINE_UNREACHABLE = "machine_unreachable"
MACHINE_BACK = "machine_back"
ROUTER_EXITED = "router_exited"

EVENTS = (MODEL_FAILED, MODEL_NOT_ANSWERING, MACHINE_UNREACHABLE, MACHINE_BACK, ROUTER_EXITED)
"""Every event a hook may be `on` (config_hooks.HOOK_EVENTS checks a config against the same names)."""


@dataclass(frozen=True)
class Situation:
    event: str
    machine: str
    model: str = ""
    reason: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        return self.event, self.machine, self.model


@dataclass(frozen=True)
class Change:
    situation: Situation
    began: bool
    """True: it holds from now on; False: it ended (a sustained hook not yet run is then not run)."""


def _unreachable(v: MachineView) -> bool:
    return v.connection is Connection.UNREACHABLE or v.router_state is RouterState.UNREACHABLE


def _failed(m: ModelInfo) -> bool:
    return m.failed or m.state is ModelState.FAILED


class Triggers:
    """The last state seen per machine and model; `feed` says which situations began and ended with an event."""

    def __init__(self) -> None:
        self._views: dict[str, MachineView] = {}
        self._failed: dict[str, set[str]] = {}  # machine -> failed model ids (absent: no list seen yet)

    def feed(self, ev: FleetEvent) -> list[Change]:
        if isinstance(ev, MachineChanged):
            return self._machine(ev.view)
        if isinstance(ev, ModelsChanged):
            return self._models(ev.machine, ev.models, whole=True)
        if isinstance(ev, ModelsUpdated):
            return self._models(ev.machine, ev.models, whole=False)
        if isinstance(ev, AnsweringChanged):
            s = Situation(MODEL_NOT_ANSWERING, ev.machine, ev.model, ev.reason)
            return [Change(s, began=not ev.answering)]
        return []

    def _machine(self, v: MachineView) -> list[Change]:
        before = self._views.get(v.name)
        self._views[v.name] = v
        if before is None:
            return []
        out: list[Change] = []
        was, now = _unreachable(before), _unreachable(v)
        if now != was:
            reason = v.connection_reason or v.router_reason
            out.append(Change(Situation(MACHINE_UNREACHABLE, v.name, reason=reason), began=now))
            out.append(Change(Situation(MACHINE_BACK, v.name), began=not now))
        exited = v.router_state is RouterState.EXITED
        if exited != (before.router_state is RouterState.EXITED):
            out.append(Change(Situation(ROUTER_EXITED, v.name, reason=v.router_reason), began=exited))
        return out

    def _models(self, machine: str, models: Iterable[ModelInfo], whole: bool) -> list[Change]:
        known = self._failed.get(machine)
        models = tuple(models)
        failed_now = {m.id for m in models if _failed(m)}
        if known is None:
            if whole:  # the first list: what has failed already is history, not news
                self._failed[machine] = failed_now
            return []
        seen = {m.id for m in models}
        before = known if whole else known & seen
        out = [Change(Situation(MODEL_FAILED, machine, m.id, _exit_reason(m)), began=True)
               for m in models if m.id in failed_now - before]  # fmt: skip
        out += [Change(Situation(MODEL_FAILED, machine, mid), began=False) for mid in sorted(before - failed_now)]
        self._failed[machine] = failed_now if whole else (known - seen) | failed_now
        return out


def _exit_reason(m: ModelInfo) -> str:
    return f"exit code {m.exit_code}" if m.exit_code is not None else "failed"
