"""What a machine's router is known by: the record kept beside it on the serving machine (pid, process start time,
port, ...) that lets any later run adopt it, and the status a look at it gives."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from app.services.core.router_types import RouterState
from app.services.hosts.process_start import ProcStart


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
    # What a wall-clock step leaves alone (hosts/process_start.py): the boot id and the start in seconds since boot.
    # Empty in a record written by an older llamaherd, or on a machine without /proc: start_time alone then decides.
    boot_id: str = ""
    since_boot: float | None = None
    # Where this run's lines begin in the log (its size when the run started; the log is appended to): the history
    # reads this run from there, not the last 64 MB of every run before it. None in an older llamaherd's record.
    log_offset: int | None = None
    # What the router was given for downloads (lifecycle/hub_env.py: hub, cache, whether a token): None in a record
    # of a router started without them (an older llamaherd), which an adopting run then says.
    hub: str | None = None

    @property
    def started(self) -> ProcStart:
        return ProcStart(self.start_time, self.boot_id, self.since_boot)

    def with_start(self, start: ProcStart) -> RouterRecord:
        return replace(self, start_time=start.epoch, boot_id=start.boot_id, since_boot=start.since_boot)

    def to_json(self) -> bytes:
        d = asdict(self)
        d["argv"] = list(self.argv)
        return (json.dumps(d, indent=1) + "\n").encode()

    @staticmethod
    def from_json(data: bytes) -> RouterRecord | None:
        try:
            d: dict[str, Any] = json.loads(data)
            if not isinstance(d, dict):
                return None
            # Fields a newer llamaherd added are left out, not taken for damage: a record taken for stale is
            # cleared, and the router it names would run on unseen.
            d = {k: v for k, v in d.items() if k in _FIELDS}
            d["argv"] = tuple(d.get("argv", ()))
            since = d.get("since_boot")
            if not isinstance(d.get("boot_id", ""), str) or not isinstance(since, int | float | None):
                d.pop("boot_id", None)  # not what we wrote: the epoch start alone decides
                d.pop("since_boot", None)
            off = d.get("log_offset")
            if isinstance(off, bool) or not isinstance(off, int | None) or (off is not None and off < 0):
                d.pop("log_offset", None)  # not what we wrote: the run is found by reading the log's end
            if not isinstance(d.get("hub"), str | None):
                d.pop("hub", None)
            d["state"] = RouterState(d.get("state", RouterState.RUNNING))
            return RouterRecord(**d)
        except (ValueError, TypeError):
            return None  # a damaged record is a stale record


_FIELDS = frozenset(f.name for f in fields(RouterRecord))


@dataclass(frozen=True)
class RouterStatus:
    """What is true of a machine's router right now."""

    state: RouterState  # RUNNING, STARTING, STOPPED (on request), EXITED or ABSENT
    record: RouterRecord | None = None
    reason: str = ""
    log_tail: tuple[str, ...] = ()
    already: bool = False  # stop(): it was not running when asked, nothing was done
