"""Marked rows (space): `l`, `u` and `x` act on every one of them after one question naming everything (and what it
skips), each done and told on its own; Esc unmarks."""

from __future__ import annotations

from app.config import Config
from app.ui.app import make_app
from app.ui.screens.confirm import ConfirmScreen
from tests.helpers.screen import screen_text
from tests.helpers.standin_fleet import NOW, demo_fleet
from tests.helpers.wait import wait_for

SIZE = (140, 44)


async def test_marked_rows_are_loaded_after_one_question() -> None:
    fleet = demo_fleet()
    app = make_app(Config(), fleet, frozen_time=NOW)
    async with app.run_test(size=SIZE) as pilot:
        table = app.dashboard.model_table
        await wait_for(lambda: len(table.rows_now) == 5, pilot=pilot)
        table.move_cursor(row=table.get_row_index("broken"))
        await pilot.press("space")  # broken, and the cursor goes down to gemma (loading)
        table.move_cursor(row=table.get_row_index("mistral-7b"))
        await pilot.press("space", "space")  # mistral-7b, then qwen (loaded)
        assert table.marked == {"broken", "mistral-7b", "qwen2.5-coder-14b"}
        assert "3 marked (Esc unmarks)" in str(table.border_subtitle)
        await pilot.press("l")
        await wait_for(lambda: isinstance(app.screen, ConfirmScreen), pilot=pilot, what="one question")
        # the question's lines wrap in its box (a focused box has the heavy border)
        text = " ".join(screen_text(app).replace("│", " ").replace("┃", " ").split())
        assert "load 2 models" in text and "load broken on workstation" in text and "load mistral-7b" in text
        assert "skipped: qwen2.5-coder-14b on workstation: already loaded" in text
        assert not [c for c in fleet.calls if c[0] == "load"]  # nothing before the answer
        await pilot.press("y")
        await wait_for(
            lambda: {("load", "workstation", "broken"), ("load", "workstation", "mistral-7b")} <= set(fleet.calls),
            pilot=pilot,
            what="each load",
        )
        assert [c for c in fleet.calls if c[0] == "load"] == [
            ("load", "workstation", "broken"), ("load", "workstation", "mistral-7b"),
        ]  # fmt: skip
        assert table.marked == set()


async def test_marks_across_the_fleet_stop_each_router_once_and_esc_unmarks() -> None:
    fleet = demo_fleet()
    app = make_app(Config(), fleet, frozen_time=NOW)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: len(app.dashboard.model_table.rows_now) == 5, pilot=pilot)
        await pilot.press("f")
        ft = app.dashboard.fleet_table
        await wait_for(lambda: len(ft.rows_now) == 7, pilot=pilot)
        for key in ("gpu-box\x1fphi-4", "workstation\x1fbroken", "workstation\x1fmistral-7b"):
            ft.move_cursor(row=ft.get_row_index(key))
            await pilot.press("space")
        await pilot.press("x")
        await wait_for(lambda: isinstance(app.screen, ConfirmScreen), pilot=pilot)
        text = " ".join(screen_text(app).replace("│", " ").replace("┃", " ").split())
        assert "stop 2 routers" in text and "stop the router on gpu-box (unloads llama-3.3-70b)" in text
        await pilot.press("n")
        await wait_for(lambda: not isinstance(app.screen, ConfirmScreen), pilot=pilot)
        assert not [c for c in fleet.calls if c[0] == "stop_router"] and len(ft.marked) == 3
        await pilot.press("escape")
        assert ft.marked == set() and "marked" not in str(ft.border_subtitle)
