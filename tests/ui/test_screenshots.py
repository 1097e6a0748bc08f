"""`python -m scripts.screenshots`: every README screenshot written, each of the screen it names, the same bytes twice.

The command runs twice (about 7 s each) against its own root directory, so a `make screenshots` in progress is
never touched; both runs must give byte-identical files.
"""

from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path

import pytest
from textual.app import App, ComposeResult

from app.services.core.router_types import ModelInfo, ModelState
from app.ui.dashboard.model_table import ModelTable
from app.ui.text.glyphs import glyphs_for
from scripts.screenshots import FILES
from tests.helpers.herd import Herd

REPO = Path(__file__).resolve().parents[2]

# Words each screen must show (searched in the SVG's text).
EXPECTED: dict[str, tuple[str, ...]] = {
    "overview.svg": ("machines", "workstation", "gpu-box-a", "models: workstation", "chat-small", "loaded",
                     "log: workstation", "warnings+errors", "running 2h14m"),
    "fleet.svg": ("fleet: every model on every machine", "gpu-box-a", "gpu-box-b", "notes-nano", "sort: machine"),
    "loading.svg": ("models: gpu-box-b", "chat-medium", "loading", "0%"),
    "failed.svg": ("models: gpu-box-a", "broken-q4", "failed (exit 1)", "exit code 1", "gpu-box-a: broken-q4",
                   "error loading model"),
    "preset-diff.svg": ("Preset [chat-medium] on gpu-box-a", "+ctx-size = 2048", "Reloading will unload: chat-medium"),
    "help.svg": ("keys", "start_router", "stop_router", "toggle_fleet", "edit_preset", "scroll, esc closes"),
    "compact.svg": ("compact", "workstation", "gpu-box-a", "gpu-box-b", "running", "models: workstation"),
    "command.svg": ("load chat-medium", "Cancel"),
    "ask.svg": ("ask chat-small on workstation", "you: In one line: what is a router preset?", "A preset is a section",
                "first token 38 ms, 41.6 tokens/s, prompt 24 tokens, reply 37 tokens"),
    "hub.svg": ("hub · workstation · https://hub.example.internal", "tiny/Tiny-GGUF:Q4_K_M", "tiny/Tiny-GGUF:Q8_0",
                "fit on workstation", "fits", "Enter pulls one onto workstation"),
    "pulling.svg": ("models: workstation", "tiny/Tiny-GGUF:Q4_K_M", "downloading", "41%", "94K/s"),
}  # fmt: skip


# The module's fixture runs `make screenshots` twice (a demo fleet of three routers each time): on a machine busy with
# the rest of the suite that took most of the default 120 s.
pytestmark = pytest.mark.timeout(600)


def svg_text(svg: str) -> str:
    """The characters on screen, in order (lines run together; Textual writes a space as &#160;)."""
    body = svg.split("</style>")[-1]
    return html.unescape(re.sub(r"<[^>]+>", "", body)).replace("\xa0", " ")


def run(out: Path, root: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "scripts.screenshots", str(out), "--root", str(root)],
        cwd=REPO, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert r.returncode == 0, f"the screenshot command failed:\n{r.stdout}\n{r.stderr}"
    assert sorted(r.stdout.split()) == sorted(str(out / name) for name in FILES)


@pytest.fixture(scope="module")
def runs(llama_server: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    base = tmp_path_factory.mktemp("shots")
    root = base / "root"
    herd = Herd(root=root, config=root / "config.toml")
    try:
        run(base / "a", root)
        assert not herd.router_pids(), "the screenshot command left routers running"
        assert not root.exists(), "the screenshot command left its directory behind"
        run(base / "b", root)
    finally:
        herd.stop_all()  # only if a run died half-way: by pid, the routers started under this root
    return base / "a", base / "b", root


def test_every_file_is_a_textual_svg_of_its_screen(runs: tuple[Path, Path, Path]) -> None:
    out, _, root = runs
    assert sorted(p.name for p in out.iterdir()) == sorted(FILES)
    assert set(EXPECTED) == set(FILES)
    for name in FILES:
        svg = (out / name).read_text(encoding="utf-8")
        assert svg.startswith("<svg"), name
        assert re.search(r"\.terminal-\d+-r\d+", svg), f"{name}: no Textual terminal-* classes"
        text = svg_text(svg)
        missing = [w for w in EXPECTED[name] if w not in text]
        assert not missing, f"{name} does not show {missing}"
    # The paths on screen are the run's own (the root the command was given), not a user's directory.
    assert str(root / "presets" / "gpu-box-a.ini") in svg_text((out / "preset-diff.svg").read_text())


def test_the_diff_view_shows_added_lines(runs: tuple[Path, Path, Path]) -> None:
    out, _, _ = runs
    svg = (out / "preset-diff.svg").read_text(encoding="utf-8")
    # One <text> element per screen line: the diff's own lines start with +++, ---, @@ and +.
    lines = [svg_text(t) for t in re.findall(r"<text [^>]*>.*?</text>", svg.split("</style>")[-1], flags=re.S)]
    assert any(ln.startswith("+++ ") for ln in lines)
    assert any(ln.startswith("--- ") for ln in lines)
    assert any(ln.startswith("+ctx-size = 2048") for ln in lines)


def test_two_runs_are_byte_identical(runs: tuple[Path, Path, Path]) -> None:
    a, b, _ = runs
    differ = [name for name in FILES if (a / name).read_bytes() != (b / name).read_bytes()]
    assert not differ, f"two runs gave different files: {differ}"


# ---- what made two runs differ once: a paint before DataTable's idle drew the columns at their header widths ----


class OneTable(App[None]):
    def compose(self) -> ComposeResult:
        yield ModelTable(glyphs_for(False), id="t")


async def test_a_paint_right_after_new_rows_draws_them_at_full_width() -> None:
    app = OneTable()
    async with app.run_test(size=(100, 10)) as pilot:
        await pilot.pause()
        table = app.query_one(ModelTable)
        table.show("m", (ModelInfo("chat-small", ModelState.LOADED),))
        # Painted at once, before DataTable measured the new row on idle: it used to read "chat…  ● loa…", and that
        # paint stayed on screen until the next update of the table.
        assert table.render_line(1).text.split()[:3] == ["chat-small", "●", "loaded"]
        table.show("m", (ModelInfo("chat-small", ModelState.LOADING),))
        assert "loading" in table.render_line(1).text
