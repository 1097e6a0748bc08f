"""A link that goes silent: the last host figures stay in view, dimmed with their age ("as of 12s ago"), while the
link is still believed up and after it is declared unreachable; never shown as live. Stepped clock, no waiting."""

from __future__ import annotations

import dataclasses

from rich.text import Text

from app.config import Config
from app.services.core.fleet_events import MachineChanged
from app.services.core.host_types import Connection
from app.ui.app import HerdApp, make_app
from tests.helpers.screen import screen_text
from tests.helpers.standin_fleet import NOW, demo_fleet, stats_history
from tests.helpers.wait import wait_for

SIZE = (120, 40)


def stats_dimmed(card: Text) -> bool:
    at = card.plain.index("cpu")
    return any("dim" in str(sp.style) and sp.start <= at < sp.end for sp in card.spans)


async def test_figures_of_a_silent_link_are_dimmed_with_their_age_before_and_after_unreachable() -> None:
    fleet = demo_fleet()
    app: HerdApp = make_app(Config(), fleet, frozen_time=NOW)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: app.state.get("gpu-box").stats is not None, pilot=pilot)
        machines = app.dashboard.machines
        live = machines.card("gpu-box").render()
        assert "as of" not in live.plain and not stats_dimmed(live)
        # Packets stop: no figures for 8 s while the keepalives have not yet given up. Already not live.
        app.frozen_time = NOW + 8
        machines.tick()
        await wait_for(lambda: "as of 8s ago" in screen_text(app), pilot=pilot)
        card = machines.card("gpu-box").render()
        assert "connected" in card.plain and stats_dimmed(card), card.plain
        # The keepalives give up: unreachable, and the last figures are still there with their age.
        app.frozen_time = NOW + 12
        up = fleet.views["gpu-box"]
        gone = dataclasses.replace(
            up, connection=Connection.UNREACHABLE, connection_reason="connection lost: keepalive timeout"
        )
        fleet.emit(MachineChanged("gpu-box", gone))
        await wait_for(lambda: machines.card("gpu-box").has_class("-down"), pilot=pilot)
        machines.tick()
        await wait_for(lambda: "as of 12s ago" in screen_text(app), pilot=pilot)
        card = machines.card("gpu-box").render()
        assert "unreachable" in card.plain and "cpu" in card.plain and stats_dimmed(card), card.plain
        # Back, with fresh figures: live again.
        fleet.emit(MachineChanged("gpu-box", up), *stats_history()[-2:])
        await wait_for(lambda: "as of" not in screen_text(app), pilot=pilot)
        assert not stats_dimmed(machines.card("gpu-box").render())
