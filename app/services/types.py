"""Typed values shared by the service layer and its users (CLI, UI).

Everything here is a plain frozen dataclass so it can cross from a worker to the UI safely.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from app.services.errors import HerdError
from app.services.shared_values import SharedValues


class ModelState(StrEnum):
    """`status.value` as the router reports it, plus FAILED (unloaded with a non-zero exit code)."""

    UNLOADED = "unloaded"
    LOADING = "loading"
    LOADED = "loaded"
    SLEEPING = "sleeping"
    DOWNLOADING = "downloading"
    DOWNLOADED = "downloaded"
    FAILED = "failed"
    UNKNOWN = "unknown"

    @property
    def running(self) -> bool:
        return self in (ModelState.LOADING, ModelState.LOADED, ModelState.SLEEPING)


@dataclass(frozen=True)
class LoadProgress:
    """Loading progress from an SSE `status_change` (`progress` payload)."""

    stages: tuple[str, ...] = ()
    current: str = ""
    value: float = 0.0


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """One entry of `GET /models`. Slots: a router may list 20,000 (a __dict__ each was ~3 MB more)."""

    id: str
    state: ModelState
    aliases: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    preset: str = ""
    exit_code: int | None = None
    failed: bool = False
    input_modalities: tuple[str, ...] = ("text",)
    source: str = ""
    can_remove: bool = False
    n_ctx: int | None = None
    n_params: int | None = None
    size: int | None = None
    progress: LoadProgress | None = None
    # Whether the model takes pictures as its own server said while it ran (None: not seen loaded yet). The list
    # keeps those arrays after unload but cannot tell them from the offline guess, so the fold remembers.
    vision_said: bool | None = None

    @property
    def port(self) -> int | None:
        """The child's port from `--port N` in its args (0 before the first load means none)."""
        args = self.args
        for i, a in enumerate(args[:-1]):
            if a == "--port":
                try:
                    p = int(args[i + 1])
                except ValueError:
                    return None
                return p or None
        return None


@dataclass(frozen=True)
class RouterProps:
    """`GET /props` of the router itself."""

    role: str
    max_instances: int | None
    models_autoload: bool | None
    build_info: str
    raw: dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class ModelProps:
    """`GET /props?model=X&autoload=false`: what the loaded child says of itself.

    vision is three-state: True, False, or None (not known: the model has not said).
    """

    model: str
    vision: bool | None
    audio: bool | None
    n_ctx: int | None
    total_slots: int | None
    is_sleeping: bool | None
    raw: dict[str, Any] = field(default_factory=dict, compare=False)


# ---- events from GET /models/sse (and synthesised by the stream) ----


@dataclass(frozen=True)
class RouterEvent:
    """Base of everything the event stream yields."""

    model: str


@dataclass(frozen=True)
class ModelStatusEvent(RouterEvent):
    """`model_status` (spawn) and `status_change` (every later update)."""

    kind: str  # "model_status" or "status_change"
    status: ModelState
    exit_code: int | None = None
    progress: LoadProgress | None = None
    info: dict[str, Any] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class DownloadProgressEvent(RouterEvent):
    done: int
    total: int


@dataclass(frozen=True)
class DownloadResultEvent(RouterEvent):
    ok: bool


@dataclass(frozen=True)
class ModelRemovedEvent(RouterEvent):
    pass


@dataclass(frozen=True)
class ModelsReloadEvent(RouterEvent):
    pass


@dataclass(frozen=True)
class UnknownEvent(RouterEvent):
    """An event name this version of llamaherd does not know; kept so nothing is silently dropped."""

    kind: str
    data: dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class ModelListEvent(RouterEvent):
    """The full `GET /models` list, read on every connect and reconnect and periodically: the truth."""

    models: tuple[ModelInfo, ...] = ()


@dataclass(frozen=True)
class StreamStateEvent(RouterEvent):
    """The stream's own state: "connected" (SSE), "polling" (no /models/sse), "disconnected" with a reason, or
    "not_answering" (connected, or connecting, but /health or the stream's headers not within their bound)."""

    state: str
    reason: str = ""
    retry_in: float | None = None


# ---- machines ----


@dataclass(frozen=True)
class GpuStats:
    name: str
    memory_used_mb: float
    memory_total_mb: float
    utilization_pct: float


@dataclass(frozen=True)
class HostStats:
    cpu_pct: float
    mem_used: int
    mem_total: int
    load_avg: tuple[float, float, float]
    gpus: tuple[GpuStats, ...] = ()


@dataclass(frozen=True)
class RunResult:
    """Result of a command run on a machine."""

    returncode: int
    stdout: bytes
    stderr: bytes

    @property
    def ok(self) -> bool:
        return self.returncode == 0


@dataclass(frozen=True)
class FileInfo:
    path: str
    size: int
    mtime: float
    mode: int | None = None  # permission bits, where the reader asked for them (stat)


# The time's place in a line is nearly always the same few (after a child's "[port] " prefix, or at 0), but each
# packed offset past 0 was a new 32-byte int per line: one shared object per value instead. Bound: PACKED_KEPT.
PACKED_KEPT = 4096
packed_ints: SharedValues[int] = SharedValues(PACKED_KEPT)


# What LogLine.parts() returns: _text, _time, level, source, port, model, skipped.
LogLineParts = tuple[int | str, int | str, str, str, int | None, str | None, int]


SKIPPED_SOURCE = "skipped"  # LogLine.source of the follower's "N lines skipped" marker


class LogLine:
    """One parsed router log line. `model` is set for a child line whose port is known.

    Compact, because a scrollback may hold 100,000 of them: slots (a __dict__ cost ~300 bytes a line), and
    `text` and `time`, nearly always slices of `raw`, kept as offsets into it rather than as copies (they doubled
    the cost of a line). Immutable, compared and hashed by value, like the frozen dataclass it replaced."""

    __slots__ = ("_text", "_time", "level", "model", "port", "raw", "skipped", "source")
    raw: str
    level: str  # "I", "W", "E", "D" or "" when the build prints none
    source: str  # "router", "child", or "skipped" for a follower's marker that lines went by unparsed
    port: int | None
    model: str | None
    skipped: int  # on a "skipped" marker: how many lines it stands for
    _text: int | str  # an offset into raw, or the text itself when it is not raw's tail
    _time: int | str  # offset << 8 | length in raw (an int costs less than a tuple), or the time itself

    def __init__(self, raw: str, text: str, level: str = "", time: str = "", source: str = "router",
                 port: int | None = None, model: str | None = None, skipped: int = 0) -> None:  # fmt: skip
        put = object.__setattr__
        put(self, "raw", raw)
        put(self, "_text", len(raw) - len(text) if text and raw.endswith(text) else text)
        at = raw.find(time) if time else -1
        put(self, "_time", packed_ints(at << 8 | len(time)) if at >= 0 and len(time) < 256 else time)
        put(self, "level", level)
        put(self, "source", source)
        put(self, "port", port)
        put(self, "model", model)
        put(self, "skipped", skipped)

    @property
    def text(self) -> str:
        t = self._text
        return self.raw[t:] if isinstance(t, int) else t

    @property
    def time(self) -> str:
        """The time as printed ("M.SS.mmm.uuu"), when present."""
        t = self._time
        return self.raw[t >> 8 : (t >> 8) + (t & 255)] if isinstance(t, int) else t

    def _key(self) -> tuple[object, ...]:
        return (self.raw, self.text, self.level, self.time, self.source, self.port, self.model, self.skipped)

    def parts(self) -> LogLineParts:
        """Everything but `raw`, as stored: a packed scrollback keeps one of these per kind of line, not per line."""
        return (self._text, self._time, self.level, self.source, self.port, self.model, self.skipped)

    @classmethod
    def from_parts(cls, raw: str, parts: LogLineParts) -> LogLine:
        """The line `parts()` was taken from, given its raw text again (no parsing, no offsets computed). Slot by
        slot through the slots' own setters: a loop over object.__setattr__ took ~3.4 us a line, a scan of a
        100,000-line scrollback 0.35 s."""
        ln = _new_line(cls)
        _put_raw(ln, raw)
        _put_text(ln, parts[0])
        _put_time(ln, parts[1])
        _put_level(ln, parts[2])
        _put_source(ln, parts[3])
        _put_port(ln, parts[4])
        _put_model(ln, parts[5])
        _put_skipped(ln, parts[6])
        return ln

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"LogLine is immutable: cannot set {name}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LogLine) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        names = ("raw", "text", "level", "time", "source", "port", "model", "skipped")
        return "LogLine(" + ", ".join(f"{n}={v!r}" for n, v in zip(names, self._key(), strict=True)) + ")"


_new_line = object.__new__
_put_raw = LogLine.__dict__["raw"].__set__
_put_text = LogLine.__dict__["_text"].__set__
_put_time = LogLine.__dict__["_time"].__set__
_put_level = LogLine.__dict__["level"].__set__
_put_source = LogLine.__dict__["source"].__set__
_put_port = LogLine.__dict__["port"].__set__
_put_model = LogLine.__dict__["model"].__set__
_put_skipped = LogLine.__dict__["skipped"].__set__


# ---- what the fleet tells its users (UI, CLI) ----


class Connection(StrEnum):
    LOCAL = "local"
    CONNECTING = "connecting"
    CONNECTED = "connected"
    UNREACHABLE = "unreachable"


class RouterState(StrEnum):
    UNKNOWN = "unknown"  # not looked yet
    ABSENT = "absent"  # no router and no record: never started here
    STARTING = "starting"
    RUNNING = "running"  # managed by a record on that machine (started or adopted)
    ATTACHED = "attached"  # somebody else's router, by url
    STOPPING = "stopping"
    STOPPED = "stopped"  # stopped on request
    EXITED = "exited"  # went away without being asked (crash, kill -9)
    UNREACHABLE = "unreachable"  # attached router that does not answer
    NOT_ANSWERING = "not answering"  # its process is there (or it accepts connections) but it says nothing in time


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


@dataclass(frozen=True)
class Problem(FleetEvent):
    """Something failed that an operator should see: a refused load, a model that failed, a lost link."""

    message: str
    model: str | None = None
    action: str = ""
    """What was being done ("start router on box"), where the failure is one of a command."""
    error: HerdError | None = None
    """The typed failure behind `message`, where there is one: a front end may word it its own way."""
