"""The footer is rebuilt when the keys it shows change, and left alone when they do not (`f` moves the focus
between two tables with the same keys: rebuilding ~15 key widgets for nothing was most of that key's cost)."""

from __future__ import annotations

import dataclasses

from textual.widgets._footer import FooterKey

from app.config import Config
from app.ui.app import make_app
from app.ui.dashboard.footer import QuietFooter, shown_keys
from tests.helpers.standin_fleet import demo_fleet
from tests.helpers.wait import wait_for


async def test_the_fleet_view_and_back_keep_the_footer_and_a_changed_key_rebuilds_it() -> None:
    app = make_app(Config(), demo_fleet())
    async with app.run_test(size=(140, 45)) as pilot:
        dash = app.dashboard
        await wait_for(lambda: len(dash.query(FooterKey)) > 0 and dash.model_table.has_focus, pilot=pilot)
        await pilot.pause(0.3)
        before = list(dash.query(FooterKey))
        for _ in range(2):
            await pilot.press("f")
            await wait_for(lambda: dash.fleet_table.has_focus, pilot=pilot)
            await pilot.press("f")
            await wait_for(lambda: dash.model_table.has_focus, pilot=pilot)
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
        await wait_for(lambda: any(k.description == "Renamed" for k in dash.query(FooterKey)), pilot=pilot)
        assert footer._drawn != shown


async def test_a_key_enabled_or_disabled_is_dimmed_in_place_without_rebuilding_the_footer() -> None:
    """A load or unload of the selected model flips which keys apply: the same key widgets are dimmed or undimmed
    (a rebuild per flip was ~8 % of a core in the soak's cycle), and what they show matches a rebuilt footer."""
    app = make_app(Config(), demo_fleet())
    async with app.run_test(size=(140, 45)) as pilot:
        dash = app.dashboard
        await wait_for(lambda: len(dash.query(FooterKey)) > 0 and dash.model_table.has_focus, pilot=pilot)
        await pilot.pause(0.3)
        before = list(dash.query(FooterKey))
        load = next(k for k in before if k.action == "load")
        real_check = dash.check_action
        dim = {"load": False}

        def check(action: str, params: tuple[object, ...]) -> bool | None:
            return None if dim.get(action) else real_check(action, params)

        dash.check_action = check  # type: ignore[method-assign,assignment]
        for dimmed in (True, False, True):
            dim["load"] = dimmed
            dash.refresh_bindings()
            await wait_for(lambda: load.has_class("-disabled") == dim["load"], pilot=pilot)
            assert load._disabled == dimmed
            await pilot.pause()
            assert bool(load.rich_style.dim) == dimmed  # what shows: dim exactly when it cannot apply
        await pilot.pause(0.3)
        assert list(dash.query(FooterKey)) == before, "the footer was rebuilt for a key's enabled state"
        in_place = [(k.key, k.description, k.has_class("-disabled"), k.tooltip) for k in before]

        # A rebuilt footer with the same bindings draws the same keys in the same states.
        footer = dash.query_one(QuietFooter)
        footer._drawn = None  # forgets what it drew: the next bindings update rebuilds it as Footer would
        dash.refresh_bindings()
        await wait_for(lambda: bool(dash.query(FooterKey)) and dash.query(FooterKey).first() not in before, pilot=pilot)
        rebuilt = [(k.key, k.description, k.has_class("-disabled"), k.tooltip) for k in dash.query(FooterKey)]
        assert rebuilt == in_place
        assert any(d for _k, _d, d, _t in rebuilt)
