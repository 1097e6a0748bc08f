"""Widgets and watchers do not pile up while the dashboard runs: each driven past many rebuilds here."""

from __future__ import annotations

import functools
import gc
import operator

from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from app.config import Config
from app.ui.app import make_app
from app.ui.dashboard.footer import QuietFooter
from tests.helpers.standin_fleet import demo_fleet
from tests.helpers.wait import wait_for


def footer_keys_alive() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, FooterKey))


async def test_footer_rebuilds_leave_no_widgets_behind() -> None:
    """Every load or unload changes which keys apply, and the footer is rebuilt: its old keys must go."""
    app = make_app(Config(), demo_fleet())
    async with app.run_test(size=(140, 45)) as pilot:
        await wait_for(lambda: len(app.screen.query(FooterKey)) > 0, pilot=pilot)
        in_dom = len(app.screen.query(FooterKey))
        for _ in range(30):
            app.dashboard._bindings_shown = ()  # as if a key's availability changed
            app.dashboard.query_one(QuietFooter)._drawn = None  # and the footer's keys with it: rebuilt
            app.dashboard.update_bindings()
            await pilot.pause(0.05)
        await pilot.pause(0.3)
        app.dashboard._bindings_shown = ()
        app.dashboard.query_one(QuietFooter)._drawn = None
        app.dashboard.update_bindings()  # prunes what the last rebuild closed
        await pilot.pause(0.3)
        footer = app.dashboard.query_one(Footer)
        watchers = sum(len(v) for v in getattr(footer, "__watchers", {}).values())
        assert watchers <= 3 * in_dom, watchers
        assert footer_keys_alive() <= 3 * in_dom  # 30 rebuilds would be 30 generations without the pruning


async def test_table_render_caches_stay_within_their_bounds() -> None:
    """Each drawn line is cached under its row's position: rows that come and go leave entries never hit again."""
    import dataclasses

    from app.services.core.fleet_events import ModelsChanged
    from app.ui.widgets.virtual_table import LINE_RENDERS
    from tests.helpers.standin_fleet import workstation_models

    fleet = demo_fleet()
    app = make_app(Config(), fleet)
    async with app.run_test(size=(220, 45)) as pilot:  # room for every column: none is hidden
        table = app.dashboard.model_table
        await wait_for(lambda: len(table.rows_now) == 5, pilot=pilot)
        base = workstation_models()
        for i in range(70):
            # A new first row whose source is wider each time: that column widens (its width is what it holds),
            # so every line is drawn again at the new widths (70 x 7 lines > LINE_RENDERS).
            extra = dataclasses.replace(base[0], id=f"a{i:02d}", source="s" * (6 + i))
            fleet.emit(ModelsChanged("workstation", (*base, extra)))
            await wait_for(functools.partial(operator.contains, table.rows_now, extra.id), pilot=pilot)
            await pilot.pause()  # painted
        assert len(table._lines) == LINE_RENDERS, "not driven past the bound"
