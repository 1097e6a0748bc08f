"""Router log lines: parsed into time, level, source and text, and child lines attributed to their model.

A child's output reaches the router's log prefixed with the child's port (`[39309] 0.00.004 I srv ...`). The port
is learned from the router's own "spawning server instance with name=X on port P" line, and from a model's
`status.args` (`--port P`), so lines are attributed even when the log is read after the fact.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from app.services.core.log_lines import SKIPPED_SOURCE, LogLine
from app.services.core.router_types import ModelInfo

# One pass for the prefix: `[port] ` (a child's line), the time stamp, the level. Three separate matches plus two
# searches cost ~35 us a line; at 20,000 lines/s that alone was most of a core.
_PREFIX = re.compile(r"(?:\[(\d+)\]\s?)?(?:(\d+\.\d{2}\.\d{3}\.\d{3})\s+)?(?:([IWEDT])\s+)?(.*)", re.DOTALL)
SPAWN_MARK = "spawning server instance with name="
_SPAWN = re.compile(r"spawning server instance with name=(\S+) on port (\d+)")
_NAMED = re.compile(r"\bname=(\S+)")


PORT_INTS = 1024


class LogAttributor:
    """Keeps the port -> model map and turns raw lines into LogLines."""

    def __init__(self) -> None:
        # Bound: one entry per port a child was spawned on; ports are reused, so at most the port range.
        self.ports: dict[int, str] = {}
        # One int object per port string: int() made a new 32-byte one for every child line (a fifth of a line's
        # cost beside its text). Bound: PORT_INTS entries (a hostile log's ever-new ports only start it over).
        self._port_ints: dict[str, int] = {}

    def learn_models(self, models: Iterable[ModelInfo]) -> None:
        for m in models:
            if m.port:
                self.ports[m.port] = m.id

    def parse(self, raw: str) -> LogLine:
        raw = raw.rstrip("\r\n")
        m = _PREFIX.match(raw)
        assert m is not None  # every group is optional and the rest is `.*`
        port_s, time, level, rest = m.groups()
        model: str | None = None
        if port_s is not None:
            child_port = self._port_ints.get(port_s) or self._port_int(port_s)
            port: int | None = child_port
            model = self.ports.get(child_port)
            source = "child"
        else:
            port, source = None, "router"
            if "name=" in rest:
                spawn = _SPAWN.search(rest) if SPAWN_MARK in rest else None
                if spawn:
                    model = spawn.group(1)
                    self.ports[int(spawn.group(2))] = model
                else:
                    named = _NAMED.search(rest)
                    if named:
                        model = named.group(1)
        return LogLine(raw=raw, text=rest, level=level or "", time=time or "", source=source, port=port, model=model)

    def _port_int(self, port_s: str) -> int:
        if len(self._port_ints) >= PORT_INTS:
            self._port_ints.clear()
        n = self._port_ints[port_s] = int(port_s)
        return n

    def parse_within(self, raws: list[str], keep: int) -> list[LogLine]:
        """Parse at most the last `keep` lines; say how many earlier ones were skipped, with a marker line.

        Spawn lines are never skipped (a substring test finds them): the port -> model map must stay right for the
        lines that are shown later. They are kept in place, so the markers around them count what was between."""
        if len(raws) <= keep:
            return [self.parse(r) for r in raws]
        cut = len(raws) - keep
        out: list[LogLine] = []
        run = 0
        for r in raws[:cut]:
            if SPAWN_MARK in r:
                if run:
                    out.append(skipped_marker(run))
                    run = 0
                out.append(self.parse(r))
            else:
                run += 1
        if run:
            out.append(skipped_marker(run))
        out.extend(self.parse(r) for r in raws[cut:])
        return out


def skipped_marker(n: int) -> LogLine:
    text = f"{n:,} lines skipped (arriving faster than they can be shown; the log file has them)"
    return LogLine(raw="", text=text, source=SKIPPED_SOURCE, skipped=n)


def parse_lines(raws: Iterable[str], attributor: LogAttributor | None = None) -> list[LogLine]:
    att = attributor or LogAttributor()
    return [att.parse(r) for r in raws]


def model_lines(lines: Iterable[LogLine], model: str) -> list[LogLine]:
    return [ln for ln in lines if ln.model == model]
