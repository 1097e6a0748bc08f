"""Activity in the dashboard: the model table's tok/s column (sparkline, rate, busy slots), the machine's total in
the table's title while something is served, "—" and one notification for a router without --metrics, and nothing left
over once a model is unloaded. The stand-in fleet emits what the poller would."""

from __future__ import annotations

import dataclasses

from app.config import Config
from app.services.activity.metrics import NO_METRICS_HINT, SPARK_POINTS, ModelActivity
from app.services.activity.poll import ActivityChanged
from app.services.core.fleet_events import ModelsChanged, Problem
from app.services.core.router_types import ModelState
from app.ui.app import HerdApp, make_app
from app.ui.dashboard.activity_cells import SPARK_CELLS, squeeze
from tests.helpers.screen import record_notifications, screen_text
from tests.helpers.standin_fleet import NOW, demo_fleet, workstation_models
from tests.helpers.wait import wait_for

SIZE = (80, 24)
MODEL = "qwen2.5-coder-14b"  # loaded on the stand-in's workstation


def busy(tps: float, spark: tuple[float, ...] = (), **kw: object) -> ModelActivity:
    fields: dict[str, object] = dict(
        tokens_per_s=tps, prompt_tokens_per_s=10.0, requests_processing=1, requests_deferred=0,
        slots_busy=1, slots_total=4,
    )  # fmt: skip
    fields.update(kw)
    return ModelActivity("workstation", MODEL, True, spark=spark or (tps,), **fields)  # type: ignore[arg-type]


def cell(app: HerdApp, model: str = MODEL) -> str:
    return app.dashboard.model_table.rows_now[model][2].text


async def test_the_model_row_shows_rate_sparkline_and_slots_and_the_card_the_total() -> None:
    fleet = demo_fleet()
    app = make_app(Config(), fleet, frozen_time=NOW)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: len(app.dashboard.model_table.rows_now) == 5, pilot=pilot)
        assert cell(app) == ""  # no figures yet
        spark = (0.0, 5.0, 42.0)
        fleet.emit(ActivityChanged("workstation", (busy(42.0, spark),)))
        await wait_for(lambda: "42" in cell(app), pilot=pilot)
        assert cell(app) == "     ▁▂█ 42 slots 1/4"  # a minute in 8 cells, scaled to its busiest
        screen = screen_text(app)
        assert "tok/s" in screen and "models: workstation · serving 42 tok/s · 1 request" in screen
        # Unloaded meanwhile: the last round's figures are not shown against it.
        unloaded = tuple(
            dataclasses.replace(m, state=ModelState.UNLOADED) if m.id == MODEL else m for m in workstation_models()
        )
        fleet.emit(ModelsChanged("workstation", unloaded))
        await wait_for(lambda: cell(app) == "", pilot=pilot)
        fleet.emit(ActivityChanged("workstation", ()))
        await wait_for(lambda: "serving" not in screen_text(app), pilot=pilot)


async def test_a_router_without_metrics_shows_a_dash_and_says_how_once() -> None:
    fleet = demo_fleet()
    app = make_app(Config(), fleet, frozen_time=NOW)
    async with app.run_test(size=SIZE) as pilot:
        told = record_notifications(app)
        await wait_for(lambda: len(app.dashboard.model_table.rows_now) == 5, pilot=pilot)
        for _ in range(3):
            fleet.emit(ActivityChanged("workstation", (ModelActivity("workstation", MODEL, False),), NO_METRICS_HINT))
            await wait_for(lambda: cell(app) == "—", pilot=pilot)
        # The cell said "—" from the first event on; a marker after the three (events are shown in order, a
        # problem's toast in the same paint as the hints or a later one) says that all three were shown.
        fleet.emit(Problem("workstation", "marker after the third event"))
        await wait_for(lambda: any("marker after the third event" in t[2] for t in told), pilot=pilot)
        assert [t for t in told if "--metrics" in t[2]] == [("information", "workstation", NO_METRICS_HINT)]


def test_the_sparkline_keeps_a_burst_when_it_squeezes_a_minute() -> None:
    minute = tuple(0.0 for _ in range(SPARK_POINTS))
    burst = (*minute[:7], 99.0, *minute[8:])
    squeezed = squeeze(burst, SPARK_CELLS)
    assert len(squeezed) == SPARK_CELLS and max(squeezed) == 99.0
    assert squeeze((1.0, 2.0), SPARK_CELLS) == [1.0, 2.0]


async def test_only_the_machines_on_screen_are_polled() -> None:
    fleet = demo_fleet()
    app = make_app(Config(), fleet, frozen_time=NOW)

    def watched() -> tuple[str, ...]:
        return fleet.watched[-1] if fleet.watched else ()

    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: watched() == ("workstation",), pilot=pilot)
        await pilot.press("2")
        await wait_for(lambda: watched() == ("gpu-box",), pilot=pilot)
        await pilot.press("f")  # the fleet view shows every machine's models
        await wait_for(lambda: watched() == ("*",), pilot=pilot)
        await pilot.press("f")
        await wait_for(lambda: watched() == ("gpu-box",), pilot=pilot)
