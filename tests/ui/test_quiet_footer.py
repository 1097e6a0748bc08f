"""The footer is rebuilt when the keys it shows change, and left alone when they do not (`f` moves the focus
between two tables with the same keys: rebuilding ~15 key widgets for nothing was most of that key's cost)."""

from __future__ import annotations

import dataclasses

from textual.widgets._footer import FooterKey

from app.config import Config
from app.ui.app import make_app
from app.ui.footer import QuietFooter, shown_keys
from tests.ui.screen import wait_for
from tests.ui.standin import demo_fleet


async def test_the_fleet_view_and_back_keep_the_footer_and_a_changed_key_rebuilds_it() -> None:
    app = make_app(Config(), demo_fleet())
    async with app.run_test(size=(140, 45)) as pilot:
        dash = app.dashboard
        await wait_for(pilot, lambda: len(dash.query(FooterKey)) > 0 and dash.model_table.has_focus)
        await pilot.pause(0.3)
        before = list(dash.query(FooterKey))
        for _ in range(2):
            await pilot.press("f")
            await wait_for(pilot, lambda: dash.fleet_table.has_focus)
            await pilot.press("f")
            await wait_for(pilot, lambda: dash.model_table.has_focus)
        await pilot.pause(0.3)
        assert list(dash.query(FooterKey)) == before, "the footer was rebuilt though its keys did not change"

        # A key the footer shows changes (here: its description): the footer must be rebuilt, and show it.
        footer = dash.query_one(QuietFooter)
        shown = shown_keys(dash)
        assert shown
        node, binding, _enabled, _tooltip = next(v for v in dash.active_bindings.values() if v[1].show)
        renamed = dataclasses.replace(binding, description="Renamed")
        node._bindings.key_to_bindings[binding.key] = [renamed]
        dash.refresh_bindings()
        await wait_for(pilot, lambda: any(k.description == "Renamed" for k in dash.query(FooterKey)))
        assert footer._drawn != shown
