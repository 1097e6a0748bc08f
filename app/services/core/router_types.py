"""What a router says, typed: its models and their states, its props, the events of its stream, and the state
of its process."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from app.services.core.download_meter import PullProgress


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
    # While downloading: bytes done of total, rate and time left, from the router's download_progress events (the
    # list itself has none of it).
    download: PullProgress | None = None

    @property
    def ctx(self) -> int | None:
        """The context size: the child's own (n_ctx, while loaded or last known), else the one its args set
        (`--ctx-size N` / `-c N`, which the router lists for an unloaded model too), else None. The command line
        and the dashboard both show this, so they agree (`models` said `-` where the dashboard said 1024)."""
        if self.n_ctx is not None:
            return self.n_ctx
        args = self.args
        for i, a in enumerate(args[:-1]):
            if a in ("--ctx-size", "-c"):
                try:
                    return int(args[i + 1]) or None  # 0: the model's own, not known before it loads
                except ValueError:
                    return None
        return None

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


class StreamState(StrEnum):
    """The event stream's own state, as StreamStateEvent says it."""

    CONNECTED = "connected"  # reading /models/sse
    POLLING = "polling"  # the router has no /models/sse: /models is polled
    DISCONNECTED = "disconnected"  # the stream ended or could not be opened; retried after `retry_in`
    NOT_ANSWERING = "not_answering"  # connected, or connecting, but /health or the headers not within their bound


@dataclass(frozen=True)
class StreamStateEvent(RouterEvent):
    """The stream's own state: "connected" (SSE), "polling" (no /models/sse), "disconnected" with a reason, or
    "not_answering" (connected, or connecting, but /health or the stream's headers not within their bound)."""

    state: StreamState
    reason: str = ""
    retry_in: float | None = None


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
