"""FleetMetrics (services/metrics/): the text a scrape gets, checked against prometheus_client's own writer and
parser, failures counted from the fleet's events, and every family documented in docs/metrics.md."""

from __future__ import annotations

import asyncio
from pathlib import Path

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from app.config import Config, MachineConfig
from app.services.activity.metrics import ModelActivity
from app.services.activity.poll import ActivityChanged
from app.services.core.fleet_events import (
    AnsweringChanged,
    HostStatsChanged,
    MachineView,
    ModelsChanged,
    ModelsUpdated,
)
from app.services.core.host_types import Connection, GpuStats, HostStats
from app.services.core.router_types import ModelInfo, ModelState, RouterState
from app.services.fleet import Fleet
from app.services.metrics.collector import FleetMetrics
from app.services.metrics.families import FAMILIES

DOCS = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"
HOSTILE = 'odd "model"\\ with\na newline'


def fleet_of(names: list[str]) -> Fleet:
    """A real Fleet, never started: its state is set as its followers set it."""
    return Fleet(Config(machines=tuple(MachineConfig(name=n, url=f"http://127.0.0.1:9/{n}") for n in names)))


def set_state(fleet: Fleet, name: str, models: dict[str, ModelState], up: bool = True) -> None:
    m = fleet.machine(name)
    m.view = MachineView(
        name=name,
        host="h",
        connection=Connection.CONNECTED if up else Connection.UNREACHABLE,
        router_state=RouterState.ATTACHED if up else RouterState.UNREACHABLE,
    )
    m.models = {k: ModelInfo(id=k, state=s) for k, s in models.items()}


def samples(text: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for fam in text_string_to_metric_families(text.decode()):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_render_is_what_prometheus_client_writes_even_for_hostile_names() -> None:
    fleet = fleet_of(["a", 'b"\\x'])
    set_state(fleet, "a", {"alpha": ModelState.LOADED, HOSTILE: ModelState.FAILED, "c": ModelState.SLEEPING})
    set_state(fleet, 'b"\\x', {"alpha": ModelState.UNLOADED}, up=False)
    metrics = FleetMetrics(fleet)
    gpus = (GpuStats("g", 1024.5, 2048.0, 1.0), GpuStats("g", 0.0, 2048.0, 0.0))
    metrics.absorb(HostStatsChanged("a", HostStats(1.0, 3 << 30, 8 << 30, (0.0, 0.0, 0.0), gpus)))
    metrics.absorb(HostStatsChanged('b"\\x', HostStats(1.0, 1 << 30, 8 << 30, (0.0, 0.0, 0.0))))
    metrics.absorb(ActivityChanged("a", (ModelActivity("a", "alpha", True, tokens_per_s=12.5, requests_processing=2),)))
    metrics.absorb(AnsweringChanged("a", "alpha", False, "no /metrics answer within 5 s, twice"))
    text = metrics.render()
    assert text == generate_latest(metrics.registry())
    got = samples(text)
    a = (("machine", "a"),)
    assert got[("llamaherd_machine_up", a)] == 1
    assert got[("llamaherd_machine_up", (("machine", 'b"\\x'),))] == 0
    assert got[("llamaherd_model_loaded", (*a, ("model", "alpha")))] == 1
    assert got[("llamaherd_model_status", (*a, ("model", HOSTILE), ("status", "failed")))] == 1
    assert got[("llamaherd_model_tokens_per_second", (*a, ("model", "alpha")))] == 12.5
    assert got[("llamaherd_model_requests_processing", (*a, ("model", "alpha")))] == 2
    assert ("llamaherd_model_tokens_per_second", (*a, ("model", "c"))) not in got  # sleeping: not loaded
    assert got[("llamaherd_model_not_answering", (*a, ("model", "alpha")))] == 1
    metrics.absorb(AnsweringChanged("a", "alpha", True))
    assert samples(metrics.render())[("llamaherd_model_not_answering", (*a, ("model", "alpha")))] == 0
    assert got[("llamaherd_host_memory_used_bytes", a)] == 3 << 30
    assert got[("llamaherd_host_gpu_memory_used_bytes", (("gpu", "0"), *a))] == 1024.5 * 2**20
    # an unreachable machine's last host figures are not shown as its present
    assert ("llamaherd_host_memory_used_bytes", (("machine", 'b"\\x'),)) not in got


def test_a_scrape_sees_the_fleet_as_it_is_now_and_reuses_what_did_not_change() -> None:
    fleet = fleet_of(["a", "b"])
    set_state(fleet, "a", {"alpha": ModelState.UNLOADED})
    set_state(fleet, "b", {"beta": ModelState.UNLOADED})
    metrics = FleetMetrics(fleet)
    first = metrics.render()
    kept_b = metrics._kept["b"]
    set_state(fleet, "a", {"alpha": ModelState.LOADED})
    second = metrics.render()
    assert first != second and second == generate_latest(metrics.registry())
    assert samples(second)[("llamaherd_model_loaded", (("machine", "a"), ("model", "alpha")))] == 1
    assert metrics._kept["b"] is kept_b  # b did not change: its lines were not made again


def test_failures_are_counted_on_each_change_to_failed_and_not_for_one_found_failed() -> None:
    fleet = fleet_of(["a"])
    set_state(fleet, "a", {"broken": ModelState.FAILED, "bad": ModelState.UNLOADED})
    metrics = FleetMetrics(fleet)

    def info(model: str, state: ModelState) -> ModelInfo:
        return ModelInfo(id=model, state=state)

    metrics.absorb(ModelsChanged("a", (info("broken", ModelState.FAILED), info("bad", ModelState.UNLOADED))))
    for state in (ModelState.LOADING, ModelState.FAILED, ModelState.FAILED, ModelState.LOADING, ModelState.FAILED):
        metrics.absorb(ModelsUpdated("a", (info("bad", state),)))
    assert metrics.failures == {("a", "bad"): 2}  # failed before anybody here saw it: 0 for "broken"
    got = samples(metrics.render())
    assert got[("llamaherd_model_failures_total", (("machine", "a"), ("model", "bad")))] == 2
    assert got[("llamaherd_model_failures_total", (("machine", "a"), ("model", "broken")))] == 0
    metrics.absorb(ModelsChanged("a", (info("broken", ModelState.FAILED),)))  # "bad" left the preset
    assert metrics.failures == {}


async def test_follow_reads_the_fleets_events() -> None:
    fleet = fleet_of(["a"])
    metrics = FleetMetrics(fleet)
    task = asyncio.create_task(metrics.follow())
    await asyncio.sleep(0)
    fleet._emit(HostStatsChanged("a", HostStats(1.0, 5 << 20, 8 << 30, (0.0, 0.0, 0.0))))
    for _ in range(100):
        if "a" in metrics.host:
            break
        await asyncio.sleep(0.01)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert metrics.host["a"].mem_used == 5 << 20
    assert fleet._subscribers == []  # it let go of the fleet when stopped


def test_every_family_is_documented_with_its_labels() -> None:
    doc = DOCS.read_text()
    for fam in FAMILIES:
        assert f"`{fam.name}{{{','.join(fam.labels)}}}`" in doc, fam.name


def test_the_grafana_dashboard_asks_only_for_metrics_that_exist() -> None:
    import json
    import re

    board = json.loads((DOCS.parent / "grafana-dashboard.json").read_text())
    exprs = [t["expr"] for p in board["panels"] for t in p["targets"]]
    used = {m for e in exprs for m in re.findall(r"llamaherd_[a-z_]+", e)}
    assert used and used <= {f.name for f in FAMILIES}


def test_metrics_only_loads_no_ui() -> None:
    """`serve --metrics-only` (a systemd unit) imports the server, the metrics and the token without Textual."""
    import subprocess
    import sys

    code = (
        "import sys, app.cli.serve_cmds, app.web.server, app.web.token, app.services.metrics.collector; "
        "sys.exit('textual' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code], cwd=DOCS.parents[1], timeout=60).returncode == 0
