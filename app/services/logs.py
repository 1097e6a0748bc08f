"""Router log lines: parsed into time, level, source and text, and child lines attributed to their model.

A child's output reaches the router's log prefixed with the child's port (`[39309] 0.00.004 I srv ...`). The port
is learned from the router's own "spawning server instance with name=X on port P" line, and from a model's
`status.args` (`--port P`), so lines are attributed even when the log is read after the fact.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from app.services.types import LogLine, ModelInfo

_CHILD = re.compile(r"^\[(\d+)\]\s?(.*)$")
_STAMP = re.compile(r"^(\d+\.\d{2}\.\d{3}\.\d{3})\s+(.*)$")
_LEVEL = re.compile(r"^([IWEDT])\s+(.*)$")
_SPAWN = re.compile(r"spawning server instance with name=(\S+) on port (\d+)")
_NAMED = re.compile(r"\bname=(\S+)")


class LogAttributor:
    """Keeps the port -> model map and turns raw lines into LogLines."""

    def __init__(self) -> None:
        self.ports: dict[int, str] = {}

    def learn_models(self, models: Iterable[ModelInfo]) -> None:
        for m in models:
            if m.port:
                self.ports[m.port] = m.id

    def parse(self, raw: str) -> LogLine:
        raw = raw.rstrip("\r\n")
        rest = raw
        port: int | None = None
        source = "router"
        m = _CHILD.match(rest)
        if m:
            port = int(m.group(1))
            rest = m.group(2)
            source = "child"
        time = ""
        m = _STAMP.match(rest)
        if m:
            time, rest = m.group(1), m.group(2)
        level = ""
        m = _LEVEL.match(rest)
        if m:
            level, rest = m.group(1), m.group(2)
        model: str | None = None
        if port is not None:
            model = self.ports.get(port)
        else:
            spawn = _SPAWN.search(rest)
            if spawn:
                model = spawn.group(1)
                self.ports[int(spawn.group(2))] = model
            else:
                named = _NAMED.search(rest)
                if named:
                    model = named.group(1)
        return LogLine(raw=raw, text=rest, level=level, time=time, source=source, port=port, model=model)


def parse_lines(raws: Iterable[str], attributor: LogAttributor | None = None) -> list[LogLine]:
    att = attributor or LogAttributor()
    return [att.parse(r) for r in raws]


def model_lines(lines: Iterable[LogLine], model: str) -> list[LogLine]:
    return [ln for ln in lines if ln.model == model]
