"""Names sort as an operator counts them in the model table, the fleet view and the CLI's list: `m1-2` before
`m1-10`, and machines `box2` before `box10`."""

from __future__ import annotations

from app.cli.output import models_table
from app.config import Config
from app.services.core.router_types import ModelState
from app.ui.app import make_app
from tests.helpers.standin_fleet import NOW, StandInFleet, model, view
from tests.helpers.wait import wait_for

NAMES = ("m1-10", "m1-2", "m1-1", "m1-11", "M1-3")
NATURAL = ["m1-1", "m1-2", "M1-3", "m1-10", "m1-11"]


def fleet_of_numbered_names() -> StandInFleet:
    models = tuple(model(n, ModelState.UNLOADED) for n in NAMES)
    return StandInFleet(
        views={"box10": view("box10"), "box2": view("box2")},
        model_lists={"box10": models, "box2": models[:2]},
    )


async def test_model_table_and_fleet_view_sort_names_naturally() -> None:
    app = make_app(Config(), fleet_of_numbered_names(), frozen_time=NOW)
    async with app.run_test(size=(140, 40)) as pilot:
        table = app.dashboard.model_table
        await wait_for(lambda: len(table.rows_now) == 5, pilot=pilot, what="the first machine's five rows")
        assert list(table.order) == NATURAL
        await pilot.press("f")
        ft = app.dashboard.fleet_table
        await wait_for(lambda: len(ft.rows_now) == 7, pilot=pilot, what="the fleet's seven rows")
        order = list(ft.order)  # sorted by machine first, as the fleet view opens
        assert "sort: machine" in str(ft.border_subtitle)
        assert [k.split("\x1f")[0] for k in order] == ["box2"] * 2 + ["box10"] * 5
        assert [k.split("\x1f")[1] for k in order] == ["m1-2", "m1-10", *NATURAL]


def test_cli_models_list_sorts_names_naturally() -> None:
    listed = models_table([model(n, ModelState.UNLOADED) for n in NAMES]).splitlines()[1:]
    assert [line.split()[0] for line in listed] == NATURAL
