"""Fit verdicts in the dashboard (issue 13, item 5): the palette's Load entries carry the verdict with its numbers,
and `l` asks first when the model will not fit or will evict something, and loads at once when it fits."""

from __future__ import annotations

import dataclasses
from typing import Any

from app.services.fit.estimate import FitEstimate, Part
from app.ui.app import HerdApp
from app.ui.dashboard.fleet_table import fleet_key
from app.ui.screens.confirm import ConfirmScreen
from tests.helpers.screen import record_notifications, screen_text
from tests.helpers.standin_fleet import StandInFleet, demo_fleet
from tests.helpers.wait import wait_for
from tests.ui.test_dashboard import SIZE, app_for

GIB = 1 << 30


def est(total_gib: float) -> FitEstimate:
    """An estimate of `total_gib`, on the CPU (the verdict is judged against free RAM)."""
    total = int(total_gib * GIB)
    kv, compute = total // 10, total // 20
    return FitEstimate(
        weights=Part(total - kv - compute, "sum of 1 shard file(s)"),
        kv=Part(kv, "cells × layers"),
        compute=Part(compute, "fitted"),
        projector=Part(0, "no projector"),
        n_ctx=4096,
        gpu_bytes=0,
    )


def flat(app: HerdApp) -> str:
    """The screen's words on one line: a long palette help line wraps anywhere."""
    return " ".join(screen_text(app).split())


async def ready(app: HerdApp, pilot: Any) -> None:
    await wait_for(lambda: len(app.dashboard.model_table.rows_now) == 5, pilot=pilot)
    # the free memory comes with the host stats: workstation 41 GiB RAM free, gpu-box 24 GiB
    await wait_for(lambda: all(app.state.get(n).stats for n in ("workstation", "gpu-box")), pilot=pilot)


async def select(app: HerdApp, pilot: Any, machine_key: str, model: str) -> None:
    await pilot.press(machine_key)
    table = app.dashboard.model_table
    await wait_for(lambda: model in table.rows_now, pilot=pilot)
    table.move_cursor(row=table.get_row_index(model))
    await pilot.pause()


def asked(app: HerdApp) -> str:
    """The question on the confirm screen, as one line (the box wraps it)."""
    screen = app.screen
    assert isinstance(screen, ConfirmScreen)
    return " ".join(str(screen.body).split())


def loads(fleet: StandInFleet) -> list[tuple[str, ...]]:
    return [c for c in fleet.calls if c[0] == "load"]


async def test_palette_load_entries_give_the_verdict_with_its_numbers() -> None:
    fleet = demo_fleet()
    fleet.estimates = {
        ("workstation", "mistral-7b"): est(6.0),
        ("gpu-box", "phi-4"): est(23.0),
        ("workstation", "broken"): "/models/broken.gguf: not a readable GGUF file",
    }
    app = app_for(fleet)
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        for query, said in (
            ("Load mistral", "fits · needs 6.0 GiB of 41.0 GiB free RAM"),
            ("Load phi-4", "tight · needs 23.0 GiB of 24.0 GiB free RAM"),
            ("Load broken", "fit unknown (/models/broken.gguf: not a readable GGUF file)"),
        ):
            await pilot.press("ctrl+p")
            await pilot.press(*query)
            await wait_for(lambda: said in flat(app), pilot=pilot)  # noqa: B023 (awaited within the iteration)
            assert "estimate: weights" in flat(app) or said.startswith("fit unknown")
            await pilot.press("escape")
            await wait_for(lambda: not flat(app).count("now unloaded"), pilot=pilot)
        # every estimate was made in a worker, none on the UI's path
        assert fleet.estimate_calls and all(in_worker for _, _, in_worker in fleet.estimate_calls)


async def test_load_that_evicts_asks_first_no_keeps_yes_loads() -> None:
    fleet = demo_fleet()
    fleet.views["gpu-box"] = dataclasses.replace(fleet.views["gpu-box"], models_max=1)
    fleet.estimates = {("gpu-box", "phi-4"): est(9.0), ("gpu-box", "llama-3.3-70b"): est(40.0)}
    app = app_for(fleet)
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await select(app, pilot, "2", "phi-4")
        await pilot.press("l")
        await wait_for(lambda: isinstance(app.screen, ConfirmScreen), pilot=pilot)
        said = asked(app)
        assert "phi-4 needs ~9.0 GiB, 24.0 GiB free on gpu-box" in said
        assert "loading evicts llama-3.3-70b (LRU), which gives back ~40.0 GiB. Load anyway?" in said
        await pilot.press("n")
        await wait_for(lambda: not isinstance(app.screen, ConfirmScreen), pilot=pilot)
        assert loads(fleet) == []
        await pilot.press("l")  # known now: asked at once
        await wait_for(lambda: isinstance(app.screen, ConfirmScreen), pilot=pilot)
        await pilot.press("y")
        await wait_for(lambda: loads(fleet), pilot=pilot)
        # the yes's load, and no other: a load the no had started (a worker, started before) would be here first
        assert loads(fleet) == [("load", "gpu-box", "phi-4")]


async def test_load_that_does_not_fit_asks_first_naming_the_numbers() -> None:
    fleet = demo_fleet()
    fleet.estimates = {("gpu-box", "phi-4"): est(30.0)}
    app = app_for(fleet)
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await select(app, pilot, "2", "phi-4")
        await pilot.press("l")
        await wait_for(lambda: isinstance(app.screen, ConfirmScreen), pilot=pilot)
        assert "phi-4 needs ~30.0 GiB, 24.0 GiB free on gpu-box; it does not fit. Load anyway?" in asked(app)
        await pilot.press("y")
        await wait_for(lambda: loads(fleet) == [("load", "gpu-box", "phi-4")], pilot=pilot)


async def test_load_that_fits_loads_without_asking() -> None:
    fleet = demo_fleet()
    fleet.estimates = {("workstation", "mistral-7b"): est(6.0)}
    app = app_for(fleet)
    asked: list[object] = []
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        push = app.push_screen

        def recording(screen: Any, *a: Any, **kw: Any) -> Any:
            asked.append(screen)
            return push(screen, *a, **kw)

        app.push_screen = recording  # type: ignore[method-assign]
        await select(app, pilot, "1", "mistral-7b")
        await pilot.press("l")
        await wait_for(lambda: loads(fleet) == [("load", "workstation", "mistral-7b")], pilot=pilot)
        assert not any(isinstance(s, ConfirmScreen) for s in asked)
        assert fleet.estimate_calls[0][:2] == ("workstation", "mistral-7b")


async def test_load_with_unknown_fit_loads_and_says_so_quietly() -> None:
    fleet = demo_fleet()
    fleet.estimates = {("workstation", "mistral-7b"): "mistral-7b.gguf: missing"}
    app = app_for(fleet)
    notes = record_notifications(app)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await ready(app, pilot)
        await select(app, pilot, "1", "mistral-7b")
        await pilot.press("l")
        await wait_for(lambda: loads(fleet) == [("load", "workstation", "mistral-7b")], pilot=pilot)
        await wait_for(lambda: any("fit unknown" in m for _, _, m in notes), pilot=pilot)
        severity, _, message = next(n for n in notes if "fit unknown" in n[2])  # (not the laptop's outage warning)
        assert severity == "information" and "fit unknown (mistral-7b.gguf: missing)" in message
        assert not isinstance(app.screen, ConfirmScreen)


async def test_fleet_view_fit_column_shows_each_verdict_as_estimates_arrive() -> None:
    fleet = demo_fleet()
    fleet.estimates = {
        ("workstation", "mistral-7b"): est(6.0),  # 41 GiB free: fits
        ("gpu-box", "phi-4"): est(30.0),  # 24 GiB free: no
        ("workstation", "broken"): "broken.gguf: not a readable GGUF file",
    }
    app = app_for(fleet)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        await pilot.press("f")
        table = app.dashboard.fleet_table
        fit = [c.key for c in table.cols].index("fit")

        def word(machine: str, model: str) -> str:
            row = table.rows_now.get(fleet_key(machine, model))
            return row[fit].text if row else "(no row)"

        await wait_for(lambda: word("workstation", "mistral-7b") == "fits", pilot=pilot)
        await wait_for(lambda: word("gpu-box", "phi-4") == "no", pilot=pilot)
        assert word("workstation", "broken") == "?"
        assert word("gpu-box", "llama-3.3-70b") == ""  # running: nothing to load
        assert all(in_worker for _, _, in_worker in fleet.estimate_calls)
        # at 80 columns the column is on screen beside the status
        assert "fit" in screen_text(app).split("fleet: every model")[1].splitlines()[1]
