"""What a machine's router is known by: the record kept beside it on the serving machine (pid, process start time,
port, ...) that lets any later run adopt it, and the status a look at it gives."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from app.services.types import RouterState


@dataclass(frozen=True)
class RouterRecord:
    pid: int
    start_time: float
    port: int
    program: str
    preset: str
    log: str
    state: RouterState = RouterState.RUNNING  # STARTING, RUNNING or STOPPING
    started_at: float = 0.0  # wall clock, for uptime
    argv: tuple[str, ...] = ()
    models_max: int | None = None
    # False for a router started before llamaherd gave every router a key: it is open to anyone on that host.
    requires_key: bool = False
    stopped_at: float = 0.0  # wall clock of the stop request, so a second stop can say since when

    def to_json(self) -> bytes:
        d = asdict(self)
        d["argv"] = list(self.argv)
        return (json.dumps(d, indent=1) + "\n").encode()

    @staticmethod
    def from_json(data: bytes) -> RouterRecord | None:
        try:
            d: dict[str, Any] = json.loads(data)
            d["argv"] = tuple(d.get("argv", ()))
            d["state"] = RouterState(d.get("state", RouterState.RUNNING))
            return RouterRecord(**d)
        except (ValueError, TypeError):
            return None  # a damaged record is a stale record


@dataclass(frozen=True)
class RouterStatus:
    """What is true of a machine's router right now."""

    state: RouterState  # RUNNING, STARTING, STOPPED (on request), EXITED or ABSENT
    record: RouterRecord | None = None
    reason: str = ""
    log_tail: tuple[str, ...] = ()
    already: bool = False  # stop(): it was not running when asked, nothing was done
