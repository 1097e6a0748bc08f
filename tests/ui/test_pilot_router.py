"""The dashboard against a real llama-server router, through the real Fleet: keys in, what the table shows out."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.config import Config, MachineConfig
from app.services.core.router_types import RouterState
from app.services.fleet import Fleet
from app.ui.app import HerdApp, make_app
from app.ui.dashboard.machine_card import MachineCard
from app.ui.screens.confirm import ConfirmScreen
from tests.helpers.herd import Herd
from tests.helpers.router import RouterProc, preset_text
from tests.helpers.screen import record_notifications, screen_text
from tests.helpers.wait import wait_for

SIZE = (120, 40)


@pytest.fixture
def box_app(router: RouterProc) -> HerdApp:
    cfg = Config(machines=(MachineConfig(name="box", url=router.url),))
    return make_app(cfg, Fleet(cfg))


def status(app: HerdApp, model: str) -> str:
    row = app.dashboard.model_table.rows_now.get(model)
    return row[1].text if row else ""


def record_statuses(app: HerdApp, model: str) -> list[str]:
    """Every status text the table was given for `model`, in order (states can pass faster than a poll)."""
    seen: list[str] = []
    table = app.dashboard.model_table
    apply_rows = table.apply_rows

    def recording(desired: Any, only: Any = None) -> Any:
        row = desired.get(model)
        if row is not None and (not seen or seen[-1] != row[1].text):
            seen.append(row[1].text)
        return apply_rows(desired, only)

    table.apply_rows = recording  # type: ignore[method-assign]
    return seen


async def select(app: HerdApp, pilot: Any, model: str) -> None:
    await wait_for(lambda: model in app.dashboard.model_table.rows_now, pilot=pilot)
    app.dashboard.model_table.move_cursor(row=app.dashboard.model_table.get_row_index(model))
    await pilot.pause()


async def test_load_key_shows_loading_then_loaded_and_unload_key_unloads(box_app: HerdApp) -> None:
    app = box_app
    async with app.run_test(size=SIZE) as pilot:
        await select(app, pilot, "alpha")
        await wait_for(lambda: "unloaded" in status(app, "alpha"), timeout=5, pilot=pilot)
        seen = record_statuses(app, "alpha")
        await pilot.press("l")
        await wait_for(
            lambda: status(app, "alpha").endswith("loaded") and "un" not in status(app, "alpha"), pilot=pilot
        )
        assert any("loading" in s for s in seen), seen
        assert seen[-1] == "● loaded"
        assert seen.index(next(s for s in seen if "loading" in s)) < seen.index("● loaded")
        await pilot.press("u")
        await wait_for(lambda: "unloaded" in status(app, "alpha"), pilot=pilot)


async def test_broken_model_shows_failed_with_exit_code_and_a_notification(box_app: HerdApp) -> None:
    app = box_app
    notes = record_notifications(app)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await select(app, pilot, "broken")
        await pilot.press("l")
        await wait_for(lambda: "failed" in status(app, "broken"), timeout=30, pilot=pilot)
        assert "exit" in status(app, "broken")
        await wait_for(lambda: any(sev == "error" and "broken" in msg for sev, _, msg in notes), pilot=pilot)
        message = next(msg for sev, _, msg in notes if sev == "error")
        assert "exit code" in message
        # It stays visible in the machine's state after the toast is gone. The toast comes at once, the card's line
        # with the next fleet paint (live.FLUSH_INTERVAL, longer just after a key): waited for, not read at once.
        assert "broken failed to load" in app.state.get("box").problem
        await wait_for(lambda: "broken failed to load" in screen_text(app), pilot=pilot)


@pytest.mark.timing
async def test_kill9_of_the_router_shows_in_the_machines_pane_within_2s(box_app: HerdApp, router: RouterProc) -> None:
    app = box_app
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: "alpha" in app.dashboard.model_table.rows_now, pilot=pilot)
        card = app.dashboard.machines.query_one(MachineCard)
        await wait_for(lambda: "attached" in screen_text(app), pilot=pilot)
        assert not card.has_class("-down")
        t0 = time.monotonic()
        router.kill9()
        await wait_for(lambda: card.has_class("-down"), timeout=5, pilot=pilot)
        took = time.monotonic() - t0
        assert took < 2.0, f"the machines pane showed the dead router after {took:.2f}s"
        # worded by its cause (issue 38): nothing listens any more, so "unreachable: ... connection refused"
        await wait_for(lambda: "connection refused" in " ".join(screen_text(app).split()), pilot=pilot)
        assert "not answering" not in screen_text(app)
        assert "1 unreachable" in screen_text(app)  # the title counts each kind of trouble


# ---- a router the dashboard manages itself (start, stop, failures with the log's lines) ----


@pytest.fixture
def managed_app(
    llama_server: str, tiny_models: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[HerdApp]:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    preset = tmp_path / "models.ini"
    preset.write_text(preset_text(dict(tiny_models)))
    cfg = Config(machines=(MachineConfig(name="here", preset=str(preset), program=llama_server),))
    herd = Herd(root=tmp_path, config=tmp_path / "config.toml")
    try:
        yield make_app(cfg, Fleet(cfg))
    finally:
        herd.stop_all()  # whatever the test left running, by pid


async def test_start_load_fail_with_log_lines_and_stop_after_asking(managed_app: HerdApp) -> None:
    app = managed_app
    notes = record_notifications(app)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_for(lambda: app.state.get("here").view.router_state is RouterState.ABSENT, pilot=pilot)
        await pilot.press("s")
        await wait_for(
            lambda: "running" in screen_text(app) and "alpha" in app.dashboard.model_table.rows_now, 40, pilot=pilot
        )
        await select(app, pilot, "broken")
        await pilot.press("l")
        await wait_for(lambda: "failed" in status(app, "broken"), timeout=30, pilot=pilot)
        await wait_for(lambda: any(sev == "error" and "broken" in msg for sev, _, msg in notes), pilot=pilot)
        message = next(msg for sev, _, msg in notes if sev == "error" and "broken" in msg)
        # One line and the key to the rest: the model's log lines covered half the screen as a toast.
        assert "\n" not in message and message.endswith(" · g for the log"), message
        # the model's own lines (credited to it), not only the router's line that names it: the log tail reads
        # on its own schedule, so they can arrive after the failure's event
        await wait_for(lambda: any(ln.model == "broken" for ln in app.dashboard.logs.buffer), pilot=pilot)
        await pilot.press("g")  # the failed model's own lines
        assert app.dashboard.logs.model == "broken" and any(
            app.dashboard.logs.wanted(ln) for ln in app.dashboard.logs.buffer
        )
        app.dashboard.model_table.focus()
        await select(app, pilot, "alpha")
        await pilot.press("l")
        await wait_for(lambda: status(app, "alpha") == "● loaded", timeout=30, pilot=pilot)
        await pilot.press("x")
        await wait_for(lambda: isinstance(app.screen, ConfirmScreen), pilot=pilot)
        assert "alpha" in screen_text(app)
        await pilot.press("y")
        await wait_for(lambda: "stopped on request" in screen_text(app), timeout=30, pilot=pilot)
        await wait_for(lambda: "unloaded" in status(app, "alpha"), timeout=5, pilot=pilot)
