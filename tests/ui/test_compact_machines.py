"""A fleet of fifty in one terminal: the machines pane turns compact when the cards do not fit (one line per machine
in a grid, the selected machine's full card under it), `c` switches by hand, `!` puts trouble first, and the title
counts each kind of trouble."""

from __future__ import annotations

import re

from app.config import Config
from app.services.core.fleet_events import HostStatsChanged
from app.services.core.host_types import Connection, HostStats
from app.services.core.router_types import ModelState, RouterState
from app.ui.app import HerdApp, make_app
from app.ui.dashboard.machine_card import MachineCard
from app.ui.screens.help import HelpScreen
from tests.helpers.screen import record_notifications, screen_text
from tests.helpers.standin_fleet import NOW, StandInFleet, model, view
from tests.helpers.wait import wait_for

TWENTY = tuple(model(f"m-{j}", ModelState.LOADED if j == 1 else ModelState.UNLOADED) for j in range(1, 21))


def fleet_of(n: int, trouble: bool = False) -> StandInFleet:
    views = {f"box{i}": view(f"box{i}") for i in range(n)}
    lists = {f"box{i}": TWENTY for i in range(n)}
    if trouble:
        views[f"box{n - 1}"] = view(
            f"box{n - 1}", connection=Connection.UNREACHABLE, connection_reason="connection refused",
            router_state=RouterState.UNKNOWN,
        )  # fmt: skip
        views[f"box{n - 2}"] = view(f"box{n - 2}", router_state=RouterState.EXITED, exit_code=9)
        lists[f"box{n - 3}"] = (*TWENTY[:19], model("m-20", ModelState.FAILED, exit_code=1, failed=True))
    return StandInFleet(views=views, model_lists=lists)


def shown_machines(app: HerdApp) -> set[str]:
    return set(re.findall(r"\bbox\d+\b", screen_text(app)))


async def test_fifty_machines_are_all_on_a_160x50_screen() -> None:
    app = make_app(Config(), fleet_of(50), frozen_time=NOW)
    async with app.run_test(size=(160, 50)) as pilot:
        pane = app.dashboard.machines
        await wait_for(lambda: pane.compact, pilot=pilot, what="the compact pane, chosen for fifty machines")
        await wait_for(lambda: len(shown_machines(app)) == 50, pilot=pilot, what="all fifty machines on screen")
        text = screen_text(app)
        assert re.search(r"box49 +running +1/20", text), text  # state word and loaded/total on each line
        assert "compact" in str(pane.border_subtitle)
        assert len(app.dashboard.model_table.rows_now) == 20  # the table keeps its room below the grid


async def test_a_few_machines_keep_their_cards_and_c_switches() -> None:
    app = make_app(Config(), fleet_of(3), frozen_time=NOW)
    async with app.run_test(size=(160, 50)) as pilot:
        pane = app.dashboard.machines
        await wait_for(lambda: len(app.dashboard.model_table.rows_now) == 20, pilot=pilot)
        await pilot.pause(0.1)
        assert not pane.compact, "three cards fit a 160×50 side column"
        await pilot.press("c")
        await wait_for(lambda: pane.compact and app.dashboard.has_class("-compact"), pilot=pilot)
        await pilot.resize_terminal(150, 48)
        await pilot.pause(0.2)
        assert pane.compact, "the operator's `c` holds over a resize"
        await pilot.press("c")
        await wait_for(lambda: not pane.compact, pilot=pilot)


async def test_a_narrow_screen_with_twelve_machines_goes_compact() -> None:
    app = make_app(Config(), fleet_of(12), frozen_time=NOW)
    async with app.run_test(size=(90, 30)) as pilot:
        pane = app.dashboard.machines
        await wait_for(lambda: pane.compact, pilot=pilot, what="compact: twelve one-line cards do not fit the band")
        await wait_for(lambda: len(shown_machines(app)) == 12, pilot=pilot, what="all twelve machines on screen")


async def test_problems_first_and_the_title_counts_each_trouble() -> None:
    app = make_app(Config(), fleet_of(8, trouble=True), frozen_time=NOW)
    async with app.run_test(size=(160, 50)) as pilot:
        pane = app.dashboard.machines
        await wait_for(lambda: "1 unreachable" in screen_text(app), pilot=pilot, what="the title's trouble counts")
        title = screen_text(app).splitlines()[0]
        assert "1 unreachable" in title and "1 router exited" in title and "1 failed model" in title
        assert pane.names[:3] == ["box0", "box1", "box2"]
        await pilot.press("exclamation_mark")
        await wait_for(lambda: pane.names[:3] == ["box7", "box6", "box5"], pilot=pilot, what="worst trouble first")
        assert pane.names[3:] == [f"box{i}" for i in range(5)]  # the rest keep their configured order
        children = [c.machine for c in pane.query(MachineCard) if c.id != "machines-detail"]
        assert children == pane.names  # shown in that order, not only listed
        await pilot.press("exclamation_mark")
        await wait_for(lambda: pane.names == [f"box{i}" for i in range(8)], pilot=pilot, what="configured order")


async def test_r_retries_a_machine_that_is_down_and_only_then() -> None:
    fleet = fleet_of(8, trouble=True)
    app = make_app(Config(), fleet, frozen_time=NOW)
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_for(lambda: len(app.dashboard.model_table.rows_now) == 20, pilot=pilot)
        await pilot.press("R")  # box0 is up: nothing to retry
        await pilot.press("8")  # the eighth machine, box7, cannot be reached
        await wait_for(lambda: app.dashboard.selected_machine == "box7", pilot=pilot)
        await pilot.press("R")
        await wait_for(lambda: ("retry_now", "box7") in fleet.calls, pilot=pilot, what="a retry of box7")
        assert [c for c in fleet.calls if c[0] == "retry_now"] == [("retry_now", "box7")]


async def test_colon_commands_complete_and_act_like_their_keys() -> None:
    fleet = fleet_of(8, trouble=True)
    app = make_app(Config(), fleet, frozen_time=NOW)
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_for(lambda: len(app.dashboard.model_table.rows_now) == 20, pilot=pilot)
        prompt = app.dashboard.prompt
        said = record_notifications(app)
        await pilot.press("colon", "l", "o", "tab")
        assert prompt.value == "load "
        await pilot.press(*"m-1", "2", "space", "tab")
        assert prompt.value == "load m-12 on "
        await pilot.press(*"box3 box4", "enter")
        await wait_for(
            lambda: {("load", "box3", "m-12"), ("load", "box4", "m-12")} <= set(fleet.calls),
            pilot=pilot,
            what="a load on each machine named",
        )
        await pilot.press("colon", *"machine box5", "enter")
        await wait_for(lambda: app.dashboard.selected_machine == "box5", pilot=pilot, what=":machine selects")
        await pilot.press("colon", *"load nope", "enter")
        await wait_for(
            lambda: any("no machine has a model 'nope'" in message for _, _, message in said),
            pilot=pilot,
            what="the mistake said",
        )
        assert not any(c[0] == "load" and c[2] == "nope" for c in fleet.calls)


async def test_a_compact_line_is_not_made_again_for_an_uptime_it_does_not_show() -> None:
    app = make_app(Config(), fleet_of(12), frozen_time=NOW)
    async with app.run_test(size=(160, 50)) as pilot:
        pane = app.dashboard.machines
        await wait_for(lambda: pane.compact, pilot=pilot, what="compact")
        await wait_for(lambda: len(shown_machines(app)) == 12, pilot=pilot, what="all twelve machines on screen")
        line, detail = pane._cards["box0"], pane._detail
        assert detail is not None and detail.size.width and line._shown is not None
        drawn, full = line._shown, detail._shown
        for card in (line, detail):
            card.clock = lambda: NOW + 3600  # an hour on: the uptime reads differently
            card.tick()
        assert line._shown is drawn  # the line shows no uptime: nothing made again
        assert detail._shown is not full  # the full card shows it: made again
        assert "running 4h07m" in " ".join(t.plain for t in detail._shown or [])


async def test_a_compact_cpu_bar_holds_still_on_jitter_and_moves_on_a_change() -> None:
    fleet = fleet_of(12)
    app = make_app(Config(), fleet, frozen_time=NOW)
    async with app.run_test(size=(160, 50)) as pilot:
        pane = app.dashboard.machines
        await wait_for(lambda: pane.compact, pilot=pilot, what="compact")
        line = pane._cards["box3"]

        async def cpu(pct: float) -> str:
            fleet.emit(
                HostStatsChanged(
                    "box3", HostStats(cpu_pct=pct, mem_used=3 << 30, mem_total=24 << 30, load_avg=(0.3, 0.2, 0.2))
                )
            )
            await wait_for(lambda: line.state.stats is not None and line.state.stats.cpu_pct == pct, pilot=pilot)
            await pilot.pause(0.05)
            return (line._shown or [])[0].plain if line._shown else ""

        first = await cpu(27.0)  # 4.3 eighths: ▌
        assert "cpu ▌" in first and "mem 12%" in first, first
        drawn = line._shown
        for jitter in (31.0, 24.0, 30.5):  # within an eighth of the bar: nothing made again
            assert await cpu(jitter) == first
            assert line._shown is drawn
        assert "cpu ▋" in await cpu(33.0)  # 5.3 eighths: a whole eighth away, the bar moves


async def test_an_alias_of_the_config_runs_its_command_and_help_lists_it() -> None:
    fleet = fleet_of(8, trouble=True)
    aliases = {"b5": "machine box5", "twelve": "load m-12"}
    app = make_app(Config(aliases=aliases), fleet, frozen_time=NOW)
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_for(lambda: len(app.dashboard.model_table.rows_now) == 20, pilot=pilot)
        prompt = app.dashboard.prompt
        await pilot.press("colon", "t", "w", "tab")
        assert prompt.value == "twelve "  # completed, and a space to go on, as a verb is
        await pilot.press(*"on box3", "enter")
        await wait_for(lambda: ("load", "box3", "m-12") in fleet.calls, pilot=pilot, what="the alias's load on box3")
        await pilot.press("colon", *"b5", "enter")
        await wait_for(lambda: app.dashboard.selected_machine == "box5", pilot=pilot, what=":b5 selects box5")
        await pilot.press("question_mark")
        await wait_for(lambda: isinstance(app.screen, HelpScreen), pilot=pilot, what="help")
        app.screen.query_one("#help-table").scroll_end(animate=False)  # the aliases come last, after every key
        await wait_for(lambda: ":twelve" in screen_text(app), pilot=pilot, what="the alias in help")
        assert "load m-12" in screen_text(app)
        assert "keys and 2 aliases: up, down" in " ".join(screen_text(app).replace("│", " ").split())
