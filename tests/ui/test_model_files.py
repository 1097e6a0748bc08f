"""The model files screen against a real llama-server router through the real Fleet: real files on disk in, the
preset file and the router's own `GET /models` out."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from textual.app import App
from textual.pilot import Pilot
from textual.widgets import DataTable, Static

from app.config import Config, MachineConfig
from app.services.fleet import Fleet
from app.services.presets.store import PresetResult
from app.ui.screens.model_files import NO_DIRS, ModelFilesScreen
from tests.helpers.herd import Herd
from tests.helpers.router import preset_text
from tests.helpers.screen import screen_text
from tests.helpers.wait import wait_for

SIZE = (120, 40)


class FilesHost(App[None]):
    """Nothing but the files screen, pushed on mount; records what it dismissed with and what it notified."""

    ENABLE_COMMAND_PALETTE = False

    def __init__(self, fleet: Fleet, machine: str = "here") -> None:
        super().__init__()
        self.results: list[PresetResult | None] = []
        self.notes: list[str] = []
        self.screen_ = ModelFilesScreen(fleet, machine)

    def on_mount(self) -> None:
        self.push_screen(self.screen_, self.results.append)

    def notify(self, message: str, **kw: Any) -> None:
        self.notes.append(message)
        super().notify(message, **kw)


@dataclass
class Here:
    fleet: Fleet
    preset: Path
    models: Path


def models_dir(root: Path, tiny: dict[str, Path]) -> Path:
    d = root / "models"
    (d / "gamma").mkdir(parents=True)
    shutil.copy(tiny["beta"], d / "gamma" / "gamma-Q8_0.gguf")
    shutil.copy(tiny["alpha"], d / "gamma" / "mmproj-gamma-f16.gguf")
    shutil.copy(tiny["alpha"], d / "gamma" / "mtp-gamma.gguf")
    shutil.copy(tiny["alpha"], d / "delta-00001-of-00002.gguf")
    shutil.copy(tiny["alpha"], d / "delta-00002-of-00002.gguf")
    return d


@pytest.fixture
def here(
    llama_server: str, tiny_models: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Here]:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    preset = tmp_path / "models.ini"
    preset.write_text(preset_text({"alpha": tiny_models["alpha"]}))
    models = models_dir(tmp_path, tiny_models)
    cfg = MachineConfig(name="here", preset=str(preset), program=llama_server, models_dirs=(str(models),))
    try:
        yield Here(Fleet(Config(machines=(cfg,))), preset, models)
    finally:
        Herd(root=tmp_path, config=tmp_path / "config.toml").stop_all()  # whatever a failed test left, by pid


def rows(screen: ModelFilesScreen) -> dict[str, list[str]]:
    """The table as text: file column -> every cell."""
    table: DataTable[Any] = screen.query_one("#mf-table", DataTable)
    out = {}
    for i in range(table.row_count):
        cells = [str(c) for c in table.get_row_at(i)]
        out[cells[0]] = cells
    return out


async def listed(host: FilesHost, pilot: Pilot[Any]) -> ModelFilesScreen:
    await wait_for(lambda: host.screen_.mode in ("files", "empty"), pilot=pilot)
    return host.screen_


async def cursor_to(pilot: Pilot[Any], screen: ModelFilesScreen, file: str) -> None:
    table: DataTable[Any] = screen.query_one("#mf-table", DataTable)
    index = list(rows(screen)).index(file)
    table.move_cursor(row=index, animate=False)
    await pilot.pause()


def backups(preset: Path) -> list[Path]:
    return sorted(preset.parent.glob(preset.name + ".bak-*"))


async def router_ids(fleet: Fleet) -> list[str]:
    return [m.id for m in await (await fleet.client("here")).models()]


async def test_files_are_listed_by_role_and_gamma_is_added_with_its_projector(here: Here) -> None:
    fleet, preset = here.fleet, here.preset
    before = preset.read_bytes()
    await fleet.start_router("here")
    try:
        host = FilesHost(fleet)
        async with host.run_test(size=SIZE) as pilot:
            screen = await listed(host, pilot)
            table = rows(screen)
            assert list(table) == [
                "delta-00001-of-00002.gguf",
                "gamma/gamma-Q8_0.gguf",
                "gamma/mmproj-gamma-f16.gguf",
                "gamma/mtp-gamma.gguf",
            ]
            _, size, role, section, in_preset, beside = table["gamma/gamma-Q8_0.gguf"]
            assert role == "model" and section == "gamma" and in_preset == "no" and size.endswith("K")
            assert "projector mmproj-gamma-f16.gguf" in beside and "draft mtp-gamma.gguf" in beside
            assert table["delta-00001-of-00002.gguf"][2:4] == ["model, 2 parts", "delta"]
            assert table["gamma/mmproj-gamma-f16.gguf"][2:] == ["projector", "-", "", "with gamma"]
            assert table["gamma/mtp-gamma.gguf"][2:] == ["draft head", "-", "", "draft for gamma"]
            await wait_for(lambda: "a Add" in screen_text(host), pilot=pilot)  # the footer follows after a refresh
            shown = screen_text(host)
            assert "Model files on here" in shown and "a Add" in shown and "n Add as" in shown
            assert "a or enter adds [delta] to the preset" in shown

            # a projector is listed but not offered: `a` says why, nothing is planned
            await cursor_to(pilot, screen, "gamma/mmproj-gamma-f16.gguf")
            await pilot.press("a")
            await wait_for(lambda: "Cannot add: mmproj-gamma-f16.gguf is a projector" in screen_text(host), pilot=pilot)
            assert screen.mode == "files" and screen.plan is None
            assert "Cannot add: mmproj-gamma-f16.gguf is a projector" in screen_text(host)

            await cursor_to(pilot, screen, "gamma/gamma-Q8_0.gguf")
            await pilot.press("a")
            await wait_for(lambda: screen.mode == "review", pilot=pilot)
            shown = screen_text(host)
            assert "+[gamma]" in shown
            assert f"+mmproj = {here.models / 'gamma' / 'mmproj-gamma-f16.gguf'}" in shown
            assert f"+model = {here.models / 'gamma' / 'gamma-Q8_0.gguf'}" in shown
            assert "The router reloads; no loaded model is affected." in shown
            assert preset.read_bytes() == before  # nothing written before enter
            await pilot.press("enter")
            await wait_for(lambda: bool(host.results), timeout=15, pilot=pilot)
        result = host.results[0]
        assert result is not None and result.written and result.reloaded
        text = preset.read_text()
        assert text.startswith(before.decode()) and "[gamma]\n" in text
        assert any("Added [gamma]" in n and "Router reloaded" in n for n in host.notes), host.notes
        assert "gamma" in await router_ids(fleet)
    finally:
        try:
            await fleet.stop_router("here")
        finally:
            await fleet.close()


async def test_adding_a_section_that_exists_is_refused_inline_and_n_adds_it_under_another_name(
    here: Here,
) -> None:
    fleet, preset = here.fleet, here.preset
    gamma = here.models / "gamma" / "gamma-Q8_0.gguf"
    preset.write_text(preset.read_text() + f"\n[gamma]\nmodel = {gamma}\n")
    before = preset.read_bytes()
    await fleet.start_router("here")
    try:
        host = FilesHost(fleet)
        async with host.run_test(size=SIZE) as pilot:
            screen = await listed(host, pilot)
            assert rows(screen)["gamma/gamma-Q8_0.gguf"][3:5] == ["gamma", "yes"]  # "in preset", a column of its own
            await cursor_to(pilot, screen, "gamma/gamma-Q8_0.gguf")
            await pilot.press("a")
            await wait_for(lambda: "Not added" in screen_text(host), pilot=pilot)
            shown = screen_text(host)
            assert "section [gamma] already exists" in shown and "Nothing was written" in shown
            assert screen.mode == "files" and screen.plan is None
            assert preset.read_bytes() == before and backups(preset) == []

            await pilot.press("n")
            assert screen.mode == "naming"
            await pilot.press("ctrl+u", *"gamma-vision", "enter")
            await wait_for(lambda: screen.mode == "review", pilot=pilot)
            assert "+[gamma-vision]" in screen_text(host)
            await pilot.press("escape")  # back to the files: nothing written
            assert screen.mode == "files" and preset.read_bytes() == before
            await pilot.press("n", "ctrl+u", *"gamma-vision", "enter")
            await wait_for(lambda: screen.mode == "review", pilot=pilot)
            await pilot.press("enter")
            await wait_for(lambda: bool(host.results), timeout=15, pilot=pilot)
        result = host.results[0]
        assert result is not None and result.written
        assert preset.read_text().startswith(before.decode())
        assert {"gamma", "gamma-vision"} <= set(await router_ids(fleet))
    finally:
        try:
            await fleet.stop_router("here")
        finally:
            await fleet.close()


async def test_an_incomplete_split_is_marked_r_rescans_and_escape_closes(here: Here) -> None:
    fleet = here.fleet
    second = here.models / "delta-00002-of-00002.gguf"
    kept = second.read_bytes()
    second.unlink()
    host = FilesHost(fleet)
    try:
        async with host.run_test(size=SIZE) as pilot:
            screen = await listed(host, pilot)
            assert rows(screen)["delta-00001-of-00002.gguf"][2] == "model, 1 of 2 parts, incomplete"
            await cursor_to(pilot, screen, "delta-00001-of-00002.gguf")
            await pilot.press("enter")
            await wait_for(lambda: "delta is missing parts (1 of 2 found)" in screen_text(host), pilot=pilot)
            assert screen.mode == "files" and "delta is missing parts (1 of 2 found)" in screen_text(host)
            await cursor_to(pilot, screen, "gamma/gamma-Q8_0.gguf")
            second.write_bytes(kept)
            await pilot.press("r")
            await wait_for(lambda: rows(screen)["delta-00001-of-00002.gguf"][2] == "model, 2 parts", pilot=pilot)
            current = screen.current_row()
            assert current is not None and current.model is not None and current.model.name == "gamma"
            await pilot.press("escape")
            await wait_for(lambda: bool(host.results), pilot=pilot)
        assert host.results == [None]
    finally:
        await fleet.close()


async def test_a_machine_without_models_dirs_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    fleet = Fleet(Config(machines=(MachineConfig(name="here", preset=str(tmp_path / "models.ini")),)))
    host = FilesHost(fleet)
    try:
        async with host.run_test(size=SIZE) as pilot:
            screen = await listed(host, pilot)
            assert screen.mode == "empty" and NO_DIRS in screen_text(host)
            assert not screen.query_one("#mf-table").display
            await pilot.press("escape")
            await wait_for(lambda: bool(host.results), pilot=pilot)
    finally:
        await fleet.close()


async def test_the_selected_file_shows_its_estimate_before_it_is_added(here: Here) -> None:
    host = FilesHost(here.fleet)
    async with host.run_test(size=SIZE) as pilot:
        screen = await listed(host, pilot)
        await cursor_to(pilot, screen, "delta-00001-of-00002.gguf")

        def hint() -> str:
            return " ".join(str(screen.query_one("#mf-hint", Static).render()).split())

        await wait_for(lambda: "estimate ~" in hint(), pilot=pilot)
        assert "weights" in hint() and "KV" in hint() and "free memory on here not known yet" in hint()
        # the weights are both parts of the split model, as the server loads them
        parts = sorted(here.models.glob("delta-*.gguf"))
        model = next(r.model for r in screen.rows.values() if r.model and r.model.name == "delta")
        est = await here.fleet.file_estimate("here", model, has_gpu=False)
        assert est.weights.bytes == sum(p.stat().st_size for p in parts) and est.kv.bytes > 0


async def test_add_as_refuses_a_name_that_cannot_be_a_models(here: Here) -> None:
    """`chat small;x` was accepted (issue 38, case 8): its log lines then showed a port instead of a name."""
    fleet, preset = here.fleet, here.preset
    before = preset.read_bytes()
    try:
        host = FilesHost(fleet)
        async with host.run_test(size=SIZE) as pilot:
            screen = await listed(host, pilot)
            await cursor_to(pilot, screen, "gamma/gamma-Q8_0.gguf")
            await pilot.press("n")
            assert screen.mode == "naming"
            await pilot.press("ctrl+u", *"chat small;x", "enter")
            await wait_for(lambda: "Not added" in screen_text(host), pilot=pilot)
            assert "cannot contain ' ', ';'" in " ".join(screen_text(host).split())
            assert screen.plan is None and preset.read_bytes() == before
    finally:
        await fleet.close()
