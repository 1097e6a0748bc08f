"""What the fleet tells its users (UI, CLI): one immutable view per machine and the events that change it.

Everything here is a plain frozen dataclass so it can cross from a worker to the UI safely."""

from __future__ import annotations

from dataclasses import dataclass

from app.services.core.errors import HerdError
from app.services.core.host_types import Connection, HostStats
from app.services.core.log_lines import LogLine
from app.services.core.router_types import ModelInfo, RouterEvent, RouterState


@dataclass(frozen=True)
class MachineView:
    """Everything the dashboard shows of one machine, as one immutable snapshot."""

    name: str
    host: str
    connection: Connection
    connection_reason: str = ""
    router_state: RouterState = RouterState.UNKNOWN
    router_reason: str = ""  # why it is down / exit code text; "" when fine
    pid: int | None = None
    port: int | None = None  # router port on the serving machine
    url: str = ""  # the URL llamaherd reaches it at (through the tunnel for ssh)
    started_at: float | None = None  # epoch seconds of the router process start
    exit_code: int | None = None
    log_tail: tuple[str, ...] = ()  # last lines of the log when the router went down
    stream: str = ""  # "sse", "polling", "down" or ""
    managed: bool = True  # False for an attach-only (url) machine
    models_max: int | None = None
    open_router: bool = False  # running without an API key (started before llamaherd required one)


@dataclass(frozen=True)
class FleetEvent:
    machine: str


@dataclass(frozen=True)
class MachineChanged(FleetEvent):
    view: MachineView


@dataclass(frozen=True)
class ModelsChanged(FleetEvent):
    """The whole model list of one router, after a list read (or when its router went). Consumers diff by id:
    models not in it are gone."""

    models: tuple[ModelInfo, ...]


@dataclass(frozen=True)
class ModelsUpdated(FleetEvent):
    """Only the models a status event changed, as they are now: a delta on the last ModelsChanged. Sending the
    whole list for each status event cost O(models) per event all the way to the screen (20,000 models)."""

    models: tuple[ModelInfo, ...]


@dataclass(frozen=True)
class ModelEvent(FleetEvent):
    """One router event as it arrived (for logs, notifications, benchmarks)."""

    event: RouterEvent


@dataclass(frozen=True)
class HostStatsChanged(FleetEvent):
    stats: HostStats
    router_rss: int | None = None  # router plus children, bytes


@dataclass(frozen=True)
class LogLines(FleetEvent):
    lines: tuple[LogLine, ...]
    # How many lines the machine had added to its scrollback once these were in (0: not counted). A view that took
    # the scrollback at count N skips an event with upto <= N: those lines were already in what it took.
    upto: int = 0


@dataclass(frozen=True)
class Problem(FleetEvent):
    """Something failed that an operator should see: a refused load, a model that failed, a lost link."""

    message: str
    model: str | None = None
    action: str = ""
    """What was being done ("start router on box"), where the failure is one of a command."""
    error: HerdError | None = None
    """The typed failure behind `message`, where there is one: a front end may word it its own way."""


@dataclass(frozen=True)
class AnsweringChanged(FleetEvent):
    """A model the router lists as loaded stopped answering its own endpoints (the activity poll's /metrics, the
    opt-in probe) within their bound, or answers again. Sent once per change, never per round."""

    model: str
    answering: bool
    reason: str = ""
    """Why it was judged not answering ("no /metrics answer within 5 s, twice"); "" when answering again."""
