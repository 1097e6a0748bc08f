"""The compact grid's detail card is hidden while the pane shows cards; a machine's stats round used to make it ask
for a layout of the whole screen (it has no width while hidden), every round, idle or busy (bench/pull_cost.py,
ui_idle_cpu.py). Hidden, it asks for none; shown (compact), it draws the selected machine."""

from __future__ import annotations

from typing import Any

from app.config import Config
from app.services.core.fleet_events import HostStatsChanged
from app.services.core.host_types import HostStats
from app.ui.app import make_app
from app.ui.dashboard.machine_card import MachineCard
from tests.helpers.screen import screen_text
from tests.helpers.wait import wait_for
from tests.ui.test_compact_machines import fleet_of

GIB = 1024**3


async def test_the_hidden_detail_card_asks_for_no_layout_then_shows_when_compact() -> None:
    fleet = fleet_of(3)
    app = make_app(Config(), fleet)
    async with app.run_test(size=(160, 50)) as pilot:
        pane = app.dashboard.machines
        await wait_for(lambda: "box0" in screen_text(app), pilot=pilot)
        assert not pane.compact
        detail = pane.query_one("#machines-detail", MachineCard)
        assert not detail.display
        layouts: list[bool] = []
        refresh = detail.refresh

        def counted(*regions: Any, **kw: Any) -> Any:
            layouts.append(bool(kw.get("layout")))
            return refresh(*regions, **kw)

        detail.refresh = counted  # type: ignore[method-assign]
        for pct in (11.0, 57.0, 23.0):
            fleet.emit(
                HostStatsChanged(
                    "box0", HostStats(cpu_pct=pct, mem_used=3 * GIB, mem_total=16 * GIB, load_avg=(0.1, 0.1, 0.1))
                )
            )
        await wait_for(lambda: "23%" in screen_text(app), pilot=pilot, what="the card's new figure")
        assert not any(layouts), layouts
        await pilot.press("c")
        await wait_for(lambda: pane.compact and detail.display, pilot=pilot, what="the compact grid")
        await wait_for(lambda: "23%" in str(detail.render()), pilot=pilot, what="the detail card's figures")
