"""FleetMetrics: the fleet's state as Prometheus metrics, read at scrape time from what is already held.

Each machine's view and model list are the Fleet's own (read on the scrape, never asked of a router); host stats,
activity figures and failures are kept here from the fleet's events as they arrive (one follower task), because
the Fleet passes those on without keeping them. One sample per machine, or per machine and model.

A scrape renders the text format itself (`render`), from each machine's lines kept until that machine changes and
each sample's `name{labels} ` kept while it exists: prometheus_client's generate_latest took 26–72 ms at 50
machines × 20 models (3,850 samples), against the 50 ms a scrape may take; this takes 5.6 ms when every machine
changed since the last scrape, 0.2 ms when none did (bench/metrics_scrape.py). The class is also a
prometheus_client Collector (`collect`), from the same rows, and a test holds `render()` byte for byte equal to
generate_latest over it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import cast

from prometheus_client import utils as prometheus_utils
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from app.services.activity.metrics import ModelActivity
from app.services.activity.poll import ActivityChanged
from app.services.core.fleet_events import (
    AnsweringChanged,
    FleetEvent,
    HostStatsChanged,
    MachineView,
    ModelsChanged,
    ModelsUpdated,
)
from app.services.core.host_types import Connection, HostStats
from app.services.core.router_types import ModelInfo, ModelState, RouterState
from app.services.metrics.families import FAMILIES
from app.services.metrics.fleet_state import FleetState

MACHINE_UP = (Connection.LOCAL, Connection.CONNECTED)
ROUTER_UP = (RouterState.RUNNING, RouterState.ATTACHED)
MIB = 1024 * 1024

# How generate_latest writes a value (untyped there): the same function, so the two texts are equal.
go_float = cast(Callable[[float], str], prometheus_utils.floatToGoString)

Row = tuple[tuple[str, ...], float]  # label values in the family's order, value
Rows = tuple[list[Row], ...]  # one list per family, in FAMILIES' order


def _escape(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


# Each family's label names in the order the text format's writer puts them (sorted by name), as indices.
_ORDER = tuple(tuple(i for _, i in sorted((name, i) for i, name in enumerate(f.labels))) for f in FAMILIES)
# Bound: label prefixes kept (`name{labels} `): a scrape of 50 machines × 20 models makes ~3,900; past this many
# (models come and go) the cache starts over.
MAX_PREFIXES = 100_000


class _Prefixes(dict[tuple[int, tuple[str, ...]], str]):
    """`name{labels} ` per (family index, label values): escaping the labels was most of a scrape's cost."""

    def __missing__(self, key: tuple[int, tuple[str, ...]]) -> str:
        if len(self) >= MAX_PREFIXES:
            self.clear()
        i, values = key
        fam = FAMILIES[i]
        text = ",".join(f'{fam.labels[j]}="{_escape(values[j])}"' for j in _ORDER[i])
        self[key] = prefix = f"{fam.name}{{{text}}} "
        return prefix


def _lines(rows: Rows, prefixes: _Prefixes) -> tuple[str, ...]:
    """Each family's sample lines for one machine."""
    return tuple(
        "".join(prefixes[i, values] + go_float(value) + "\n" for values, value in fam_rows)
        for i, fam_rows in enumerate(rows)
    )


HEADERS = tuple(f"# HELP {f.name} {f.help}\n# TYPE {f.name} {f.kind}\n" for f in FAMILIES)


class FleetMetrics(Collector):
    """Start `follow()` as a task; a scrape is `render()` (or a CollectorRegistry over `registry()`)."""

    def __init__(self, fleet: FleetState) -> None:
        self.fleet = fleet
        self.host: dict[str, HostStats] = {}
        self.activity: dict[str, dict[str, ModelActivity]] = {}
        self.failures: dict[tuple[str, str], int] = {}
        """Failures seen since this process began following, per (machine, model) listed now."""
        self.not_answering: set[tuple[str, str]] = set()
        """Loaded models the activity poll (or the probe) found silent, until they answer again."""
        self._last_state: dict[tuple[str, str], ModelState] = {}
        self._version: dict[str, int] = {}  # bumped by what this keeps of a machine (host, activity, failures)
        self._prefixes = _Prefixes()
        self._kept: dict[str, tuple[MachineView, tuple[ModelInfo, ...], int, Rows, tuple[str, ...]]] = {}

    def registry(self) -> CollectorRegistry:
        """A registry of this collector alone (no process or platform metrics of the serving Python)."""
        reg = CollectorRegistry(auto_describe=False)
        reg.register(self)
        return reg

    # ---- events ----

    def _changed(self, machine: str) -> None:
        self._version[machine] = self._version.get(machine, 0) + 1

    def absorb(self, ev: FleetEvent) -> None:
        if isinstance(ev, HostStatsChanged):
            self.host[ev.machine] = ev.stats
            self._changed(ev.machine)
        elif isinstance(ev, ActivityChanged):
            self.activity[ev.machine] = {a.model: a for a in ev.models}
            self._changed(ev.machine)
        elif isinstance(ev, AnsweringChanged):
            if ev.answering:
                self.not_answering.discard((ev.machine, ev.model))
            else:
                self.not_answering.add((ev.machine, ev.model))
            self._changed(ev.machine)
        elif isinstance(ev, ModelsChanged):
            listed = {m.id for m in ev.models}
            for key in [k for k in self._last_state if k[0] == ev.machine and k[1] not in listed]:
                del self._last_state[key]
                self.failures.pop(key, None)
                self.not_answering.discard(key)
            self._states(ev.machine, ev.models)
        elif isinstance(ev, ModelsUpdated):
            self._states(ev.machine, ev.models)

    def _states(self, machine: str, models: Iterable[ModelInfo]) -> None:
        """Count a model's failure when it goes to FAILED from another state; one found failed when this began is
        counted as 0 (it failed before anybody here saw it), so a restart of `serve` counts no failure again."""
        for m in models:
            key = (machine, m.id)
            before = self._last_state.get(key)
            self._last_state[key] = m.state
            if m.state is ModelState.FAILED and before is not None and before is not ModelState.FAILED:
                self.failures[key] = self.failures.get(key, 0) + 1
                self._changed(machine)

    async def follow(self) -> None:
        """Absorb the fleet's events until cancelled."""
        q = self.fleet.subscribe()
        try:
            while True:
                self.absorb(await q.get())
                while not q.empty():
                    self.absorb(q.get_nowait())
        finally:
            with contextlib.suppress(Exception):
                self.fleet.unsubscribe(q)

    # ---- one machine's samples ----

    def _rows(self, name: str, view: MachineView, models: Sequence[ModelInfo]) -> Rows:
        rows: Rows = tuple([] for _ in FAMILIES)
        machine_up, router_up, loaded, status, tps, processing, silent, failures, mem, gpu_mem = rows
        up = view.connection in MACHINE_UP
        machine_up.append(((name,), 1.0 if up else 0.0))
        router_up.append(((name,), 1.0 if view.router_state in ROUTER_UP else 0.0))
        acts = self.activity.get(name, {})
        for m in models:
            labels = (name, m.id)
            is_loaded = m.state is ModelState.LOADED
            loaded.append((labels, 1.0 if is_loaded else 0.0))
            status.append(((name, m.id, m.state.value), 1.0))
            if is_loaded:
                a = acts.get(m.id)
                tps.append((labels, (a.tokens_per_s or 0.0) if a else 0.0))
                processing.append((labels, float(a.requests_processing or 0) if a else 0.0))
                silent.append((labels, 1.0 if labels in self.not_answering else 0.0))
            failures.append((labels, float(self.failures.get(labels, 0))))
        host = self.host.get(name) if up else None  # an unreachable machine's last figures are not its present
        if host is not None:
            mem.append(((name,), float(host.mem_used)))
            for i, g in enumerate(host.gpus):
                gpu_mem.append(((name, str(i)), g.memory_used_mb * MIB))
        return rows

    def _machine(self, name: str) -> tuple[Rows, tuple[str, ...]]:
        """The machine's rows and lines, made again only when its view, its models or what is kept here changed."""
        view, models, version = self.fleet.view(name), self.fleet.models(name), self._version.get(name, 0)
        kept = self._kept.get(name)
        if (
            kept is not None
            and kept[0] is view
            and kept[2] == version
            and len(kept[1]) == len(models)
            and all(a is b for a, b in zip(kept[1], models, strict=True))
        ):
            return kept[3], kept[4]
        rows = self._rows(name, view, models)
        lines = _lines(rows, self._prefixes)
        self._kept[name] = (view, models, version, rows, lines)
        return rows, lines

    # ---- a scrape ----

    def render(self) -> bytes:
        """Every family in Prometheus' text format (version 0.0.4), as generate_latest writes it."""
        names = self.fleet.names
        for gone in [k for k in self._kept if k not in names]:
            del self._kept[gone]
        per_machine = [self._machine(n)[1] for n in names]
        parts: list[str] = []
        for i, header in enumerate(HEADERS):
            parts.append(header)
            parts.extend(lines[i] for lines in per_machine)
        return "".join(parts).encode()

    def describe(self) -> Iterable[Metric]:
        return ()  # unchecked: the families are made on each scrape

    def collect(self) -> Iterator[Metric]:
        families: list[GaugeMetricFamily | CounterMetricFamily] = []
        for fam in FAMILIES:
            if fam.kind == "counter":
                families.append(CounterMetricFamily(fam.name.removesuffix("_total"), fam.help, labels=fam.labels))
            else:
                families.append(GaugeMetricFamily(fam.name, fam.help, labels=fam.labels))
        for name in self.fleet.names:
            rows, _ = self._machine(name)
            for family, fam_rows in zip(families, rows, strict=True):
                for values, value in fam_rows:
                    family.add_metric(values, value)
        yield from families
