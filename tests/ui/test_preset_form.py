"""The preset editor against a real llama-server router through the real Fleet: keys in, the file and the router's
own view of it out. Snapshots of the form and of the diff view at 100x40.

Regenerate the snapshots with `pytest tests/ui/test_preset_form.py --snapshot-update` and look at the SVGs.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, ClassVar

import pytest
from textual.app import App
from textual.binding import Binding, BindingType
from textual.pilot import Pilot
from textual.widgets import Input

from app.config import Config, MachineConfig
from app.services.core.router_types import ModelInfo
from app.services.fleet import Fleet
from app.services.presets.ini_text import PresetDoc
from app.services.presets.store import PresetResult
from app.services.router.load_and_wait import ensure_loaded
from app.ui.screens.confirm import ConfirmScreen
from app.ui.screens.preset_form import PresetForm
from tests.helpers.herd import Herd
from tests.helpers.router import preset_text
from tests.helpers.screen import record_notifications, screen_text
from tests.helpers.wait import wait_for

SIZE = (100, 40)
SNAP_DIR = Path("/tmp/llamaherd-preset-form-snapshot")  # a fixed path, so the title and diff headers never vary


class FormHost(App[None]):
    """Nothing but the editor, pushed on mount; records what it dismissed with and what it notified."""

    ENABLE_COMMAND_PALETTE = False
    BINDINGS: ClassVar[list[BindingType]] = [Binding("l", "app_key", "stands for the dashboard's one-letter keys")]

    def __init__(self, fleet: Fleet, section: str, *, close_fleet: bool = False) -> None:
        super().__init__()
        self.fleet = fleet
        self.section = section
        self.close_fleet = close_fleet
        self.results: list[PresetResult | None] = []
        self.notes: list[str] = []
        self.app_keys = 0
        self.form = PresetForm(fleet, "here", section)

    def on_mount(self) -> None:
        self.push_screen(self.form, self.results.append)

    def action_app_key(self) -> None:
        self.app_keys += 1

    def notify(self, message: str, **kw: Any) -> None:
        self.notes.append(message)
        super().notify(message, **kw)

    async def on_unmount(self) -> None:
        if self.close_fleet:  # the snapshot runs the app in an event loop of its own
            await self.fleet.close()


def make_fleet(preset: Path, program: str) -> Fleet:
    return Fleet(Config(machines=(MachineConfig(name="here", preset=str(preset), program=program),)))


@pytest.fixture
def here(
    llama_server: str, tiny_models: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Fleet, Path]]:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    preset = tmp_path / "models.ini"
    preset.write_text(preset_text(dict(tiny_models)))
    try:
        yield make_fleet(preset, llama_server), preset
    finally:
        Herd(root=tmp_path, config=tmp_path / "config.toml").stop_all()  # whatever a failed test left, by pid


@asynccontextmanager
async def running(fleet: Fleet) -> AsyncIterator[None]:
    """The machine's router, started through the Fleet and always stopped again."""
    await fleet.start_router("here")
    try:
        yield
    finally:
        try:
            await fleet.stop_router("here")
        finally:
            await fleet.close()


async def opened(host: FormHost, pilot: Pilot[Any]) -> PresetForm:
    await wait_for(lambda: host.form.mode == "form", pilot=pilot)
    return host.form


def backups(preset: Path) -> list[Path]:
    return sorted(preset.parent.glob(preset.name + ".bak-*"))


async def alpha_preset(fleet: Fleet) -> str:
    client = await fleet.machine("here").connect_router()
    models: list[ModelInfo] = await client.models()
    return next(m.preset for m in models if m.id == "alpha")


async def test_ctx_size_typed_shows_the_diff_writes_one_line_and_the_router_serves_it(
    here: tuple[Fleet, Path],
) -> None:
    fleet, preset = here
    before = preset.read_bytes()
    async with running(fleet):
        client = await fleet.machine("here").connect_router()
        await ensure_loaded(client, "alpha", timeout=30)
        assert "ctx-size = 256" in await alpha_preset(fleet)  # from [*]
        host = FormHost(fleet, "alpha")
        async with host.run_test(size=SIZE) as pilot:
            form = await opened(host, pilot)
            assert "[alpha]" in screen_text(host) and str(preset) in screen_text(host)
            ctx = form.query_one("#field-ctx-size", Input)
            assert ctx.value == "" and ctx.placeholder == "256 (from [*])"
            await pilot.press("tab", "tab", "tab")  # model file, projector, draft model, then context size
            assert host.focused is ctx
            await pilot.press("5", "1", "2", "ctrl+s")
            await wait_for(lambda: form.mode == "review", pilot=pilot)
            shown = screen_text(host)
            assert "+ctx-size = 512" in shown
            assert "Reloading will unload: alpha" in shown
            assert preset.read_bytes() == before  # nothing written before the confirmation
            await pilot.press("enter")
            await wait_for(lambda: bool(host.results), timeout=15, pilot=pilot)
        result = host.results[0]
        assert result is not None and result.written and result.reloaded
        expected = PresetDoc.parse(before.decode()).set_key("alpha", "ctx-size", "512").text()
        assert preset.read_text() == expected  # the one new line; every other line byte-identical
        assert [str(p) for p in backups(preset)] == [result.backup]
        assert Path(str(result.backup)).read_bytes() == before
        assert any("Backup:" in n and "reloaded" in n for n in host.notes), host.notes

        async def reloaded() -> bool:
            return "ctx-size = 512" in await alpha_preset(fleet)

        await wait_for(reloaded, 10, what="the router serving the new preset")


async def test_a_semicolon_is_refused_inline_naming_the_field_and_nothing_is_written(
    here: tuple[Fleet, Path],
) -> None:
    fleet, preset = here
    before = preset.read_bytes()
    async with running(fleet):
        host = FormHost(fleet, "alpha")
        async with host.run_test(size=SIZE) as pilot:
            form = await opened(host, pilot)
            template = form.query_one("#field-chat-template", Input)
            template.focus()
            await pilot.press(*"chatml;x", "ctrl+s")
            await pilot.pause()
            error = screen_text(host)
            assert "Not saved: Chat template (chat-template)" in error
            assert "cannot contain ';'" in error
            assert form.mode == "form" and host.focused is template and template.has_class("pf-bad")
            said: list[str] = []
            show_error = form.show_error

            def shown(message: str, style: str = "") -> None:
                said.append(message)
                show_error(message, style)

            form.show_error = shown  # type: ignore[method-assign]
            await pilot.press("ctrl+s")  # still refused: nothing reaches the file
            # the refusal is said again (the same words, so on screen nothing changes): the save was handled
            await wait_for(lambda: any(m.startswith("Not saved") for m in said), pilot=pilot, what="the refusal again")
            assert form.mode == "form"
        assert preset.read_bytes() == before
        assert backups(preset) == []


async def test_escape_cancels_without_writing(here: tuple[Fleet, Path]) -> None:
    fleet, preset = here
    before = preset.read_bytes()
    async with running(fleet):
        host = FormHost(fleet, "alpha")
        async with host.run_test(size=SIZE) as pilot:
            form = await opened(host, pilot)
            form.query_one("#field-ctx-size", Input).focus()
            await pilot.press("1", "0", "2", "4", "ctrl+s")
            await wait_for(lambda: form.mode == "review", pilot=pilot)
            await pilot.press("escape")  # back to the form, the edit kept
            assert form.mode == "form" and form.query_one("#field-ctx-size", Input).value == "1024"
            await pilot.press("ctrl+s")
            await wait_for(lambda: form.mode == "review", pilot=pilot)
            await pilot.press("l", "escape")  # the app's own keys do not act behind the editor
            assert host.app_keys == 0
            await pilot.press("escape")  # cancel: an edit is not written yet, so it asks first
            await wait_for(lambda: isinstance(host.screen, ConfirmScreen), pilot=pilot)
            assert "Discard changes to [alpha] on here?" in screen_text(host)
            await pilot.press("n")  # no: back to the form, the edit kept
            await wait_for(lambda: host.screen is form, pilot=pilot)
            assert form.query_one("#field-ctx-size", Input).value == "1024" and not host.results
            await pilot.press("escape")
            await wait_for(lambda: isinstance(host.screen, ConfirmScreen), pilot=pilot)
            await pilot.press("y")  # discard
            await wait_for(lambda: bool(host.results), pilot=pilot)
        assert host.results == [None]
        assert preset.read_bytes() == before and backups(preset) == []


async def test_escape_without_edits_closes_at_once_and_an_added_key_is_an_edit(here: tuple[Fleet, Path]) -> None:
    fleet, preset = here
    before = preset.read_bytes()
    async with running(fleet):
        host = FormHost(fleet, "alpha")
        async with host.run_test(size=SIZE) as pilot:
            await opened(host, pilot)
            await pilot.press("escape")  # nothing edited: closed, no question
            await wait_for(lambda: bool(host.results), pilot=pilot)
            assert host.results == [None] and not isinstance(host.screen, ConfirmScreen)
            again = PresetForm(fleet, "here", "alpha")
            host.push_screen(again, host.results.append)
            await wait_for(lambda: again.mode == "form", pilot=pilot)
            await pilot.press("ctrl+n", *"temp", "tab", "0", ".", "7")
            await pilot.press("escape")
            await wait_for(lambda: isinstance(host.screen, ConfirmScreen), pilot=pilot)
            await pilot.press("escape")  # Esc on the question keeps the edits
            await wait_for(lambda: host.screen is again, pilot=pilot)
            await pilot.press("ctrl+r")  # the added row removed: nothing left to lose
            await pilot.press("escape")
            await wait_for(lambda: len(host.results) == 2, pilot=pilot)
        assert preset.read_bytes() == before


async def test_free_rows_add_check_against_the_servers_options_and_remove(here: tuple[Fleet, Path]) -> None:
    fleet, preset = here
    before = preset.read_bytes()
    async with running(fleet):
        host = FormHost(fleet, "alpha")
        async with host.run_test(size=SIZE) as pilot:
            form = await opened(host, pilot)
            await pilot.press("ctrl+n", *"temp", "tab", "0", ".", "7", "ctrl+s")
            await wait_for(lambda: form.mode == "review", pilot=pilot)
            assert "+temp = 0.7" in screen_text(host)
            await pilot.press("escape", "shift+tab", "ctrl+u", *"no-such-option", "ctrl+s")
            await pilot.pause()
            assert "'no-such-option' is not an option of this llama-server" in screen_text(host)
            await pilot.press("ctrl+r", "ctrl+s")  # remove the row: then nothing is left to write
            await pilot.pause(0.3)
            assert "Nothing changed" in screen_text(host)
            assert form.mode == "form"
        assert preset.read_bytes() == before


async def test_an_hf_token_in_a_free_row_is_written_with_a_warning(here: tuple[Fleet, Path]) -> None:
    """The router puts a preset's hf-token on the model's command line (test_ssh_secrets_argv.py): said at once."""
    fleet, _ = here
    async with running(fleet):
        host = FormHost(fleet, "alpha")
        async with host.run_test(size=SIZE) as pilot:
            form = await opened(host, pilot)
            said = record_notifications(host)
            await pilot.press("ctrl+n", *"hf-token", "tab", *"hf_abc", "ctrl+s")
            await wait_for(lambda: form.mode == "review", pilot=pilot)
            assert "+hf-token = hf_abc" in screen_text(host)
            assert [m for _, _, m in said if "hf-token: the router passes it" in m and "hub_token_env" in m]


async def test_a_file_changed_on_disk_is_refused_with_the_diff_and_the_form_reloads(
    here: tuple[Fleet, Path],
) -> None:
    fleet, preset = here
    async with running(fleet):
        host = FormHost(fleet, "alpha")
        # wide enough for the diff's header lines, which carry the preset's path: under pytest-xdist the temporary
        # folder is longer (popen-gwN) and at 100 columns the label after it was cut off
        async with host.run_test(size=(160, 40)) as pilot:
            form = await opened(host, pilot)
            form.query_one("#field-ctx-size", Input).focus()
            await pilot.press("5", "1", "2", "ctrl+s")
            await wait_for(lambda: form.mode == "review", pilot=pilot)
            theirs = preset.read_text().replace("[beta]\n", "[beta]\nthreads = 2\n")
            preset.write_text(theirs)  # somebody else's edit, after the form read the file
            await pilot.press("enter")
            await wait_for(lambda: form.mode == "conflict", pilot=pilot)
            # the diff is drawn after the mode changes: under load a look straight away can come before it
            await wait_for(lambda: "(your edit)" in screen_text(host), pilot=pilot)
            shown = screen_text(host)
            assert "changed on disk since it was read" in shown
            # the file on disk now (with their line) against this edit (without it, with ours)
            assert "(on disk now)" in shown and "(your edit)" in shown
            assert "-threads = 2" in shown and "+ctx-size = 512" in shown
            assert preset.read_text() == theirs and backups(preset) == []
            await pilot.press("r")
            await wait_for(lambda: form.mode == "form", pilot=pilot)
            assert form.query_one("#field-ctx-size", Input).value == ""  # read again from the file
        assert host.results == []


async def test_the_global_section_hides_the_model_files(here: tuple[Fleet, Path]) -> None:
    fleet, _ = here
    host = FormHost(fleet, "*")
    try:
        async with host.run_test(size=SIZE) as pilot:
            form = await opened(host, pilot)
            assert not form.query("#field-model") and not form.query("#field-mmproj")
            assert not form.query("#field-model-draft")
            assert form.query_one("#field-ctx-size", Input).value == "256"
            assert host.focused is form.query_one("#field-ctx-size", Input)
            assert "[*] every model" in screen_text(host)
    finally:
        await fleet.close()


async def test_without_the_servers_options_a_warning_shows_and_keys_are_checked_for_grammar_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    preset = tmp_path / "models.ini"
    preset.write_text(preset_text({"alpha": tmp_path / "alpha.gguf"}, {"alpha": {"fa": "true", "no-mmproj": "1"}}))
    before = preset.read_bytes()
    fleet = make_fleet(preset, str(tmp_path / "no-llama-server"))
    host = FormHost(fleet, "alpha")
    try:
        async with host.run_test(size=SIZE) as pilot:
            form = await opened(host, pilot)
            assert "Keys are not checked against this llama-server's options" in screen_text(host)
            # other spellings are read (and shown in the form's words), and are no free rows
            assert form.values()["flash-attn"] == "on" and form.values()["mmproj"] == "off"
            assert not form.query(".free-row")
            form.query_one("#field-stop-timeout", Input).focus()
            await pilot.press("5", "ctrl+s")
            await wait_for(lambda: form.mode == "review", pilot=pilot)
            diff = form.plan.diff if form.plan else ""
            # untouched fields keep their spelling: only the changed one is written
            assert [ln for ln in diff.splitlines() if ln[:1] in "+-" and ln[:3] not in ("+++", "---")] == [
                "+stop-timeout = 5"
            ]
            await pilot.press("escape", "escape")  # back to the form, then away from it, which asks: edited
            await wait_for(lambda: isinstance(host.screen, ConfirmScreen), pilot=pilot)
            await pilot.press("y")
            await wait_for(lambda: bool(host.results), pilot=pilot)
    finally:
        await fleet.close()
    assert preset.read_bytes() == before


async def test_a_model_listed_with_a_canonical_tag_edits_the_section_the_file_spells(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, llama_server: str
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    preset = tmp_path / "models.ini"
    preset.write_text(preset_text({"tiny:q8_0": tmp_path / "tiny.gguf"}))
    fleet = make_fleet(preset, llama_server)
    host = FormHost(fleet, "tiny:Q8_0")  # the id the router lists for [tiny:q8_0]
    try:
        async with host.run_test(size=SIZE) as pilot:
            form = await opened(host, pilot)
            assert form.values()["model"] == str(tmp_path / "tiny.gguf")
            form.query_one("#field-threads", Input).focus()
            await pilot.press("2", "ctrl+s")
            await wait_for(lambda: form.mode == "review", pilot=pilot)
            assert form.plan is not None and "[tiny:Q8_0]" not in form.plan.new_text
            assert "[tiny:q8_0]\nmodel = " in form.plan.new_text and "threads = 2" in form.plan.new_text
    finally:
        await fleet.close()


# ---- snapshots ----


@pytest.fixture
def snap_fleet(llama_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Fleet]:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    shutil.rmtree(SNAP_DIR, ignore_errors=True)
    SNAP_DIR.mkdir(parents=True)
    preset = SNAP_DIR / "models.ini"
    models: dict[str, Path | str] = {"alpha": SNAP_DIR / "alpha.gguf", "beta": SNAP_DIR / "beta.gguf"}
    preset.write_text(
        preset_text(models, {"alpha": {"flash-attn": "on", "jinja": "true", "top-k": "40", "alias": "a1, a2"}})
    )
    try:
        yield make_fleet(preset, llama_server)
    finally:
        shutil.rmtree(SNAP_DIR, ignore_errors=True)


async def settle(pilot: Pilot[Any]) -> None:
    app = pilot.app
    assert isinstance(app, FormHost)
    await wait_for(lambda: app.form.mode == "form", pilot=pilot)
    for widget in app.form.query(Input):
        widget.cursor_blink = False  # a blinking cursor makes every screenshot different
    await pilot.pause(0.1)


# The whole form, 62 lines, with no scrollbar: at 100x40 the scrollbar's thumb came out a cell shorter in CI, on four
# workers, than anywhere it was tried by hand (a layout one line taller); a screen it fits on has no thumb to vary.
WHOLE_FORM_SIZE = (100, 70)


def test_snapshot_form(snap_compare: Any, snap_fleet: Fleet) -> None:
    assert snap_compare(
        FormHost(snap_fleet, "alpha", close_fleet=True), terminal_size=WHOLE_FORM_SIZE, run_before=settle
    )


def test_snapshot_diff(snap_compare: Any, snap_fleet: Fleet) -> None:
    async def to_diff(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        app = pilot.app
        assert isinstance(app, FormHost)
        app.form.query_one("#field-ctx-size", Input).focus()
        await pilot.press("2", "0", "4", "8", "ctrl+s")
        await wait_for(lambda: app.form.mode == "review", pilot=pilot)
        await pilot.pause(0.1)

    assert snap_compare(FormHost(snap_fleet, "alpha", close_fleet=True), terminal_size=SIZE, run_before=to_diff)


async def test_a_bad_value_already_in_the_file_is_refused_on_its_own_field_when_saving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    preset = tmp_path / "models.ini"
    preset.write_text(preset_text({"alpha": tmp_path / "alpha.gguf"}, {"alpha": {"ctk": "bogus"}}))
    before = preset.read_bytes()
    fleet = make_fleet(preset, str(tmp_path / "no-llama-server"))
    host = FormHost(fleet, "alpha")
    try:
        async with host.run_test(size=SIZE) as pilot:
            form = await opened(host, pilot)
            form.query_one("#field-stop-timeout", Input).focus()
            await pilot.press("5", "ctrl+s")  # another field changed: the whole section is checked on save
            await pilot.pause()
            assert "Not saved: KV cache type K (cache-type-k): 'bogus' is not one of" in screen_text(host)
            cache_k = form.query_one("#field-cache-type-k")
            assert form.mode == "form" and cache_k.has_class("pf-bad") and host.focused is cache_k
    finally:
        await fleet.close()
    assert preset.read_bytes() == before
