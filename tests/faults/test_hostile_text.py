"""Hostile names and log lines from a real router never reach the terminal raw, and are never parsed as markup:
the dashboard walked screen by screen (a real router whose preset holds them, a log holding them), and the
headless `models` and `logs`. `--json` keeps them exact."""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from textual.app import App

from app.config import Config, MachineConfig
from app.services.core.textsafe import is_visible
from app.services.fleet import Fleet
from app.ui.app import HerdApp, make_app
from app.ui.screens.help import HelpScreen
from tests.helpers.herd import Herd, local_config
from tests.helpers.screen import screen_text
from tests.helpers.wait import wait_for

SIZE = (130, 44)
# A section name ends at the first ']' (so no OSC sequence fits in one); a file name or a log line has no limit.
OSC_TITLE = "osc\x1bP0;PWNED\x07"  # ESC P: a DCS string, ended by BEL
CLEAR = "clear\x1b[2J\x1b[H"
C1 = "cone\u009b31mred"
BROKEN = "broke\x1b[31mn"
FILE_NAME = "file\x1b]0;FILE-PWNED\x07"
MARKUP_ALIASES = "[/x],[bold]loud[/bold]"
HOSTILE_TAG = "tag\x1b[5mblink\x1b]2\x07"  # (a preset value ends at ';', so no full OSC here)
LOG_LINES = [
    "srv  log: title \x1b]0;LOG-PWNED\x07 after",
    "srv  log: clear \x1b[2J\x1b[H after",
    "srv  log: link \x1b]8;;http://x\x1b\\here\x1b]8;;\x1b\\ after",
    "srv  log: markup [bold]not bold[/bold] and [/x] after",
    "srv  log: 8-bit \u009b2J and \u009d0;t\u009c after",
]


def hostile_preset(model: Path, broken: Path) -> str:
    return (
        "[*]\nctx-size = 256\n\n"
        f"[{BROKEN}]\nmodel = {broken}\n\n"
        f"[{OSC_TITLE}]\nmodel = {model}\nalias = {MARKUP_ALIASES}\ntags = {HOSTILE_TAG}\n\n"
        f"[{CLEAR}]\nmodel = {model}\n\n"
        f"[{C1}]\nmodel = {model}\n"
    )


@pytest.fixture
def hostile(tmp_path: Path, tiny_models: dict[str, Path], llama_server: str) -> Iterator[tuple[Herd, Path]]:
    preset = tmp_path / "models.ini"
    preset.write_text(hostile_preset(tiny_models["alpha"], tiny_models["broken"]), encoding="utf-8")
    herd = Herd(root=tmp_path, config=tmp_path / "config.toml", extra_env={"LLAMA_SERVER": llama_server})
    files = tmp_path / "files"  # a models-dir: a model id there is a file name, which may hold anything but '/'
    files.mkdir()
    shutil.copy(tiny_models["beta"], files / f"{FILE_NAME}.gguf")
    herd.write_config(local_config("here", preset, extra_args=["--models-dir", str(files)]))
    r = herd.run("start", "here")
    assert r.returncode == 0, r.stderr
    record = herd.record()
    assert record is not None
    log = Path(str(record["log"]))
    with open(log, "a", encoding="utf-8") as f:
        f.write("\n".join(LOG_LINES) + "\n")
    try:
        yield herd, log
    finally:
        herd.stop_all()


def rendered(app: App[Any]) -> str:
    """Every character the screen is made of (segments as the terminal would be sent them, minus styles)."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True, legacy_windows=False)
    update = app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    assert update is not None  # a full update always renders
    return "".join(seg.text for seg in console.render(update) if not seg.control)


def assert_clean(app: App[Any], where: str) -> str:
    text = rendered(app)
    bad = sorted({f"U+{ord(c):04X}" for c in text if not is_visible(c, multiline=True)})
    assert not bad, f"{where}: control characters reached the screen: {bad}\n{screen_text(app)}"
    return screen_text(app)


async def test_walking_the_dashboard_shows_hostile_text_as_text(
    hostile: tuple[Herd, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    herd, _log = hostile
    monkeypatch.setenv("XDG_STATE_HOME", str(herd.state_home))
    cfg = Config(machines=(MachineConfig(name="here", preset=str(herd.root / "models.ini")),))
    app: HerdApp = make_app(cfg, Fleet(cfg))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: len(app.dashboard.model_table.rows_now) == 5, timeout=20, pilot=pilot)
        await wait_for(lambda: "LOG-PWNED" in screen_text(app), timeout=20, pilot=pilot)
        shown = assert_clean(app, "models and log")
        assert "osc\u241bP0;PWNED" in shown and "file\u241b]0;FILE-PWNED" in shown  # there to read, as text
        assert "[bold]not bold[/bold] and [/x]" in shown  # markup-looking text stays literal
        assert "[/x], [bold]loud[/bold]" in shown or "[/x], [bold]" in shown  # aliases, clipped maybe

        await pilot.press("f")  # fleet view
        await wait_for(lambda: app.dashboard.fleet_view and "fleet: every model" in screen_text(app), pilot=pilot)
        assert_clean(app, "fleet view")
        await pilot.press("f")

        app.dashboard.model_table.move_cursor(row=app.dashboard.model_table.get_row_index(BROKEN))
        await pilot.press("l")  # a model that fails to load: the toasts name it
        await wait_for(lambda: len(app._notifications) > 0, timeout=30, pilot=pilot)
        # the failure on screen (this app shows no toasts: run_test without notifications), beside the id
        await wait_for(lambda: "failed to load" in screen_text(app), timeout=30, pilot=pilot)
        assert "broke\u241b[31mn" in assert_clean(app, "error toast")
        app.dashboard.model_table.move_cursor(row=app.dashboard.model_table.get_row_index(OSC_TITLE))

        await pilot.press("ctrl+p")  # the command palette lists "Load <id> on here" for each
        await pilot.pause(0.3)
        await pilot.press(*"load osc")
        await wait_for(lambda: "Load osc\u241bP0;PWNED" in screen_text(app), pilot=pilot)
        shown = assert_clean(app, "palette")
        assert "Load osc\u241bP0;PWNED" in shown
        await pilot.press("escape")
        await pilot.pause(0.2)

        await pilot.press("e")  # the preset editor on the hostile section
        await wait_for(lambda: "Preset" in screen_text(app), timeout=20, pilot=pilot)
        await pilot.pause(0.5)
        assert_clean(app, "preset editor")
        await pilot.press("escape")
        await pilot.pause(0.2)

        await pilot.press("question_mark")
        await wait_for(lambda: isinstance(app.screen, HelpScreen) and "start_router" in screen_text(app), pilot=pilot)
        assert_clean(app, "help")
        await pilot.press("escape")
        assert app.is_running


def test_headless_models_and_logs_print_nothing_raw_and_json_stays_exact(hostile: tuple[Herd, Path]) -> None:
    herd, _log = hostile
    r = herd.run("models", "here")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert is_visible(out, multiline=True), [c for c in out if not is_visible(c, multiline=True)]
    assert "osc\u241bP0;PWNED\u2407" in out and "cone\\x9b31mred" in out and "[/x],[bold]loud[/bold]" in out
    assert "file\u241b]0;FILE-PWNED\u2407" in out
    assert len(out.strip().splitlines()) == 6  # a header and one row per model: no name split a row

    r = herd.run("models", "here", "--json")
    ids = {m["id"] for m in json.loads(r.stdout)}
    assert {OSC_TITLE, CLEAR, C1, BROKEN} <= ids and any(i.startswith(FILE_NAME) for i in ids)  # exact, as JSON escapes
    assert "\x1b" not in r.stdout  # and still nothing raw on the terminal

    r = herd.run("logs", "here", "--lines", "50")
    assert r.returncode == 0, r.stderr
    assert is_visible(r.stdout, multiline=True)
    assert "title \u241b]0;LOG-PWNED\u2407 after" in r.stdout
    assert "8-bit \\x9b2J and \\x9d0;t\\x9c after" in r.stdout


async def test_hostile_events_from_any_router_reach_the_screen_as_text() -> None:
    """The same walk without a router binary: the stand-in fleet sends what a hostile router (or link) would,
    including what a preset cannot hold (a newline in an id), and errors that look like markup."""
    import dataclasses

    from app.services.core.fleet_events import LogLines, MachineChanged, ModelsChanged, Problem
    from app.services.core.log_lines import LogLine
    from app.services.core.router_types import ModelState, RouterState
    from tests.helpers.standin_fleet import NOW, demo_fleet, model, view

    fleet = demo_fleet()
    app = make_app(Config(), fleet, frozen_time=NOW)
    hostile_models = (
        model(OSC_TITLE, ModelState.LOADED, aliases=("[/x]", "[bold]loud[/bold]"), tags=(HOSTILE_TAG,)),
        model("two\nlines", ModelState.UNLOADED),
        model(C1, ModelState.UNLOADED, source="src\x1b[2J"),
    )
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: len(app.dashboard.model_table.rows_now) > 0, pilot=pilot)
        fleet.emit(ModelsChanged("workstation", hostile_models))
        fleet.emit(LogLines("workstation", tuple(LogLine(raw=t, text=t, model=OSC_TITLE) for t in LOG_LINES)))
        fleet.emit(Problem("workstation", "Saved [tiny-a] in /p/[/x] \x1b]0;PROBLEM\x07", model=OSC_TITLE))
        fleet.emit(MachineChanged("gpu-box", dataclasses.replace(
            view("gpu-box", host="gpu-box"), router_state=RouterState.EXITED, router_reason="boom\x1b[2J[/x]",
        )))  # fmt: skip
        await wait_for(lambda: "two\u240alines" in screen_text(app), timeout=10, pilot=pilot)
        # every event shown: the log lines and gpu-box's reason (emitted last) on screen
        on_screen = ("LOG-PWNED", "[bold]not bold[/bold] and [/x]", "boom\u241b[2J[/x]")
        await wait_for(lambda: all(t in screen_text(app) for t in on_screen), pilot=pilot)
        shown = assert_clean(app, "hostile events")
        assert "LOG-PWNED" in shown and "[bold]not bold[/bold] and [/x]" in shown
        assert "boom\u241b[2J[/x]" in shown
        row = next(ln for ln in shown.splitlines() if "two\u240alines" in ln)
        assert "unloaded" in row  # the id with a newline kept its whole row
        app.notify("Saved [tiny-a] in /p/[/x] \x1b]0;T\x07", title="[b]t[/b]")  # as every screen calls it
        await pilot.pause(0.3)
        shown = assert_clean(app, "toasts")
        assert "Saved [tiny-a] in /p/[/x]" in shown
        await pilot.press("ctrl+p")
        await pilot.pause(0.3)
        await pilot.press(*"load two")
        await wait_for(lambda: "Load two\u240alines" in screen_text(app), pilot=pilot)
        assert "Load two\u240alines" in assert_clean(app, "palette")
        await pilot.press("escape")
        assert app.is_running
