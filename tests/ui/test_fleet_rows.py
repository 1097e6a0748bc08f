"""The fleet view's rows, built as data (no app needed)."""

from __future__ import annotations

from app.ui.dashboard.fleet_table import FleetTable, fleet_key
from app.ui.text.format import DIM
from app.ui.text.glyphs import glyphs_for
from tests.helpers.standin_fleet import workstation_models


def test_a_fit_verdict_does_not_colour_the_machine_cell_of_the_next_rows() -> None:
    models = workstation_models()[:3]
    table = FleetTable(glyphs_for(False))
    table.sources = {"gpu-box": models}
    table.down = frozenset({"gpu-box"})  # its machine cells are dimmed
    table.fits = {"gpu-box": {m.id: "no" for m in models}}
    rows = table.desired_rows()
    machine_styles = {rows[fleet_key("gpu-box", m.id)][0].style for m in models}
    assert machine_styles == {DIM}, machine_styles
