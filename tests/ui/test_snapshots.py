"""Snapshots of the main states at 80x24 and 120x40 (the main screen, fleet view and help at 90x30 too), from the
rendering stand-in at a frozen clock.

Regenerate with `pytest tests/ui --snapshot-update` and look at the SVGs before committing them.
"""

from __future__ import annotations

from typing import Any

import pytest
from textual.pilot import Pilot

from app.config import Config
from app.services.core.fleet_events import Problem
from app.ui.app import HerdApp, make_app
from app.ui.screens.model_detail import ModelDetail
from tests.helpers.standin_fleet import NOW, StandInFleet, demo_fleet
from tests.helpers.wait import wait_for

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40")]
# The main views also at 90x30, a common small terminal: nothing cut, nothing blank that could show something.
WITH_90X30 = [*SIZES, pytest.param((90, 30), id="90x30")]


def build(fleet: StandInFleet | None = None, ascii_mode: bool = False) -> HerdApp:
    return make_app(Config(), fleet or demo_fleet(), frozen_time=NOW, ascii_mode=ascii_mode)


async def settle(pilot: Pilot[Any]) -> None:
    app = pilot.app
    assert isinstance(app, HerdApp)
    await wait_for(
        lambda: app.dashboard.model_table.rows_now and app.dashboard.machines.card("workstation").state.stats,
        pilot=pilot,
    )
    # The demo's laptop is unreachable from the start, which is said as a toast (test_unreachable.py): the pictures
    # are of the panes, not of a toast over them.
    await wait_for(lambda: app._notifications, pilot=pilot)
    app.clear_notifications()
    await pilot.pause(0.1)


@pytest.mark.parametrize("size", WITH_90X30)
def test_main(snap_compare: Any, size: tuple[int, int]) -> None:
    assert snap_compare(build(), terminal_size=size, run_before=settle)


@pytest.mark.parametrize("size", WITH_90X30)
def test_fleet_view(snap_compare: Any, size: tuple[int, int]) -> None:
    assert snap_compare(build(), terminal_size=size, run_before=settle, press=["f"])


@pytest.mark.parametrize("size", WITH_90X30)
def test_help(snap_compare: Any, size: tuple[int, int]) -> None:
    assert snap_compare(build(), terminal_size=size, run_before=settle, press=["question_mark"])


@pytest.mark.parametrize("size", SIZES)
def test_failed_model(snap_compare: Any, size: tuple[int, int]) -> None:
    fleet = demo_fleet()

    async def fail(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        fleet.emit(
            Problem(
                "workstation",
                "broken failed to load on workstation (exit code 1)\n"
                "[40013] gguf_init_from_file_impl: failed to read magic\n"
                "[40013] srv    load_model: failed to load model 'broken.gguf'",
                model="broken",
            )
        )
        await pilot.pause(0.2)

    assert snap_compare(build(fleet), terminal_size=size, run_before=fail, press=["g"])


@pytest.mark.parametrize("size", SIZES)
def test_disconnected_machine(snap_compare: Any, size: tuple[int, int]) -> None:
    assert snap_compare(build(), terminal_size=size, run_before=settle, press=["3"])


def test_ascii_main(snap_compare: Any) -> None:
    assert snap_compare(build(ascii_mode=True), terminal_size=(80, 24), run_before=settle)


async def detail_open(pilot: Pilot[Any]) -> None:
    """The loaded qwen's detail (key i): as a screen at 80x24, beside the table at 160x40; its fetch done."""
    await settle(pilot)
    app = pilot.app
    assert isinstance(app, HerdApp)
    app.dashboard.model_table.show_row("qwen2.5-coder-14b")
    await pilot.press("i")
    await wait_for(lambda: any(p.fetched.rounds for p in app.screen.query(ModelDetail)), pilot=pilot)
    await pilot.pause(0.1)


@pytest.mark.parametrize("size", [pytest.param((80, 24), id="80x24"), pytest.param((160, 40), id="160x40")])
def test_model_detail(snap_compare: Any, size: tuple[int, int]) -> None:
    assert snap_compare(build(), terminal_size=size, run_before=detail_open)
