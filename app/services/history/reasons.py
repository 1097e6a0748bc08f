"""Why a model changed state, read from a managed router's log: the transitions of one router run, with reasons.

The router says why a model went, in its own lines (checked against this llama-server build):
`unload_lru: models_max limit reached, removing LRU name=X` (evicted), `evicting idle LRU name=X for a queued
request` (evicted), `load_models: (reload) unloading model name=X (source updated or removed)` (preset reload),
`unload: stopping model instance name=X` (asked), `run: instance name=X exited with status N` (the end; non-zero
with no reason before it: crashed). A load is `spawning server instance with name=X on port P`; its child's own
`llama_server: model loaded` line says when it was ready. Router times are `M.SS.mmm.uuu` since the router's
start; a child's are since the child's start (its spawn line).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from app.services.core.log_lines import LogLine
from app.services.core.textsafe import visible
from app.services.logs.parse import LogAttributor

_TIME = re.compile(r"(\d+)\.(\d{2})\.(\d{3})\.(\d{3})")
_SPAWN = re.compile(r"spawning server instance with name=(\S+) on port (\d+)")
_LRU = re.compile(r"unload_lru: models_max limit reached, removing LRU name=(\S+)")
_IDLE_LRU = re.compile(r"evicting idle LRU name=(\S+) for a queued request")
_RELOAD = re.compile(r"\(reload\) unloading model name=(\S+)")
_STOPPING = re.compile(r"unload: stopping model instance name=(\S+)")
_FORCED = re.compile(r"force-killing model instance name=(\S+)")
_EXITED = re.compile(r"instance name=(\S+) exited with status (-?\d+)")
RUN_START = "llama_server: initializing"
_ROUTER_EXIT = "cleaning up before exit"
CHILD_LOADED = "llama_server: model loaded"
# What the serving machine is asked for: only the lines above (and a child's error lines, for a crash's detail),
# so a chatty child cannot push the reasons out of the window read.
LOG_PATTERN = (
    r"spawning server instance with name=|removing LRU name=|evicting idle LRU name=|\(reload\) unloading model|"
    r"stopping model instance name=|force-killing model instance|exited with status|llama_server: model loaded|"
    r"llama_server: initializing|cleaning up before exit|^\[ *[0-9]+\] [0-9.]+ E "
)
# Lines of one run are written by several threads, so a clock a little behind the line before is the same run.
CLOCK_SLACK = 1_000_000
LAST_LINES = 3  # a crash's detail: the child's last error lines
DETAIL_MAX = 400


def rel_us(stamp: str) -> int | None:
    """`M.SS.mmm.uuu` as microseconds, or None when the line has no time."""
    m = _TIME.fullmatch(stamp)
    if m is None:
        return None
    mins, secs, ms, us = (int(g) for g in m.groups())
    return ((mins * 60 + secs) * 1000 + ms) * 1000 + us


@dataclass(frozen=True)
class Transition:
    at_us: int  # microseconds since the router's start
    model: str
    from_state: str
    to_state: str
    reason: str
    detail: str = ""


def current_run(lines: list[LogLine]) -> list[LogLine]:
    """The lines of the last router run in an appended log: after its last start line, or after the last point
    where the router's clock went back (a window that begins mid-run has no start line)."""
    start = 0
    last = -1
    for i, ln in enumerate(lines):
        if ln.source != "router":
            continue
        if RUN_START in ln.text:
            start, last = i, -1
            continue
        t = rel_us(ln.time)
        if t is not None:
            if t < last - CLOCK_SLACK:
                start = i
            last = t
    return lines[start:]


class LogReasons:
    """Feed one run's lines in order; transitions come out with their reasons. An eviction waits for the next
    spawn, which names the model it made room for (the router evicts, then loads)."""

    def __init__(self, ports: dict[int, str] | None = None) -> None:
        self.att = LogAttributor()
        self.att.ports.update(ports or {})
        self.state: dict[str, str] = {}
        self.pending: dict[str, tuple[str, str]] = {}  # model -> (reason, detail) said before it exits
        self.spawned_at: dict[str, int] = {}
        self.errors: dict[str, deque[str]] = {}
        self.held: list[Transition] = []  # evictions waiting for the spawn they made room for
        self.now = 0
        self.clock = -1  # the router's own clock at its last timed line (a run restarted: it goes back)
        self.router_stopping = False

    def feed_raw(self, raws: Iterable[str]) -> list[Transition]:
        out: list[Transition] = []
        for r in raws:
            out.extend(self.feed(self.att.parse(r)))
        return out

    def feed_more(self, raws: Iterable[str]) -> list[Transition] | None:
        """Lines that follow the ones already fed (read from where the last read ended); None when they belong to
        another run (a start line, or the router's clock went back): read that run from the start instead."""
        out: list[Transition] = []
        for r in raws:
            ln = self.att.parse(r)
            if ln.source == "router":
                t = rel_us(ln.time)
                if RUN_START in ln.text or (t is not None and t < self.clock - CLOCK_SLACK):
                    return None
            out.extend(self.feed(ln))
        return out

    def feed(self, ln: LogLine) -> list[Transition]:
        if ln.source == "child":
            return self._child(ln)
        if ln.source != "router":
            return []
        t = rel_us(ln.time)
        if t is not None:
            self.now = t
            self.clock = t
        text = ln.text
        if "name=" not in text:
            if _ROUTER_EXIT in text:
                self.router_stopping = True
            return []
        out: list[Transition] = []
        if m := _SPAWN.search(text):
            model = m.group(1)
            self.att.ports[int(m.group(2))] = model
            for h in self.held:
                out.append(Transition(h.at_us, h.model, h.from_state, h.to_state, h.reason, f"{h.detail}, for {model}"))
            self.held = []
            # The spawn can be written before the victim's exit line (another thread logs the exit).
            for victim, (reason, detail) in self.pending.items():
                if reason == "evicted" and ", for " not in detail:
                    self.pending[victim] = (reason, f"{detail}, for {model}")
            self.spawned_at[model] = self.now
            self.errors.pop(model, None)
            out.append(self._to(model, "loading", "requested", "load asked (an API call or a request for it)"))
        elif m := _LRU.search(text):
            self.pending[m.group(1)] = ("evicted", "models_max limit reached, least recently used")
        elif m := _IDLE_LRU.search(text):
            self.pending[m.group(1)] = ("evicted", "idle least recently used, for a queued request")
        elif m := _RELOAD.search(text):
            self.pending[m.group(1)] = ("preset reload", "its preset source was updated or removed")
        elif m := _STOPPING.search(text):
            why = ("router stopped", "the router is shutting down") if self.router_stopping else ("requested", "")
            self.pending.setdefault(m.group(1), why)
        elif m := _FORCED.search(text):
            reason, detail = self.pending.get(m.group(1), ("requested", ""))
            self.pending[m.group(1)] = (reason, _join(detail, "force-killed after its stop timeout"))
        elif m := _EXITED.search(text):
            out.extend(self._exited(m.group(1), int(m.group(2))))
        return out

    def finish(self) -> list[Transition]:
        """The evictions still waiting (the log ends before the next spawn)."""
        out, self.held = self.held, []
        return out

    def _exited(self, model: str, status: int) -> list[Transition]:
        reason, detail = self.pending.pop(model, ("", ""))
        was = self.state.get(model, "loaded")
        to = "failed" if status != 0 else "unloaded"
        if not reason:
            if status == 0:
                reason, detail = "exited", "the model's process ended by itself (exit status 0)"
            else:
                during = " while loading" if was == "loading" else ""
                reason, detail = "crashed", f"exit status {status}{during}"
                last = list(self.errors.get(model, ()))
                if last:
                    detail += "; last lines: " + " | ".join(last)
        elif status != 0:
            detail = _join(detail, f"exit status {status}")
        tr = self._to(model, to, reason, detail)
        if reason == "evicted" and ", for " not in detail:
            self.held.append(tr)
            return []
        return [tr]

    def _child(self, ln: LogLine) -> list[Transition]:
        model = ln.model
        if model is None:
            return []
        text = ln.text
        if CHILD_LOADED in text and model in self.spawned_at:
            own = rel_us(ln.time) or 0
            self.now = max(self.now, self.spawned_at.pop(model) + own)
            return [self._to(model, "loaded", "ready", "")]
        if ln.level == "E":
            self.errors.setdefault(model, deque(maxlen=LAST_LINES)).append(visible(text.strip())[:120])
        return []

    def _to(self, model: str, to: str, reason: str, detail: str) -> Transition:
        was = self.state.get(model, _BEFORE.get(to, "unknown"))
        self.state[model] = to
        return Transition(self.now, model, was, to, reason, visible(detail)[:DETAIL_MAX])


# What a model most likely was before a transition whose start the window did not show.
_BEFORE = {"loading": "unloaded", "loaded": "loading", "unloaded": "loaded", "failed": "loaded"}


def _join(a: str, b: str) -> str:
    return f"{a}; {b}" if a else b


def run_reasons(raws: Iterable[str], ports: dict[int, str] | None = None) -> tuple[LogReasons, list[Transition]]:
    """The transitions of the last run in these raw lines, and the parser that read them (to feed what follows);
    evictions still waiting for their spawn are in its `held`."""
    att = LogAttributor()
    att.ports.update(ports or {})
    run = current_run([att.parse(r) for r in raws])
    parser = LogReasons(att.ports)
    out: list[Transition] = []
    for ln in run:
        out.extend(parser.feed(ln))
    return parser, out


def transitions(raws: Iterable[str], ports: dict[int, str] | None = None) -> list[Transition]:
    """Every transition of the last run in these raw lines, evictions included."""
    parser, out = run_reasons(raws, ports)
    out.extend(parser.finish())
    out.sort(key=lambda t: t.at_us)
    return out
