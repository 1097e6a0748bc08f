"""Pure pieces: formatting, glyphs and ASCII detection, the keyed row diff, the state folding."""

from __future__ import annotations

from app.services.core.fleet_events import HostStatsChanged, MachineChanged, ModelsChanged, Problem
from app.services.core.host_types import Connection, HostStats
from app.services.core.router_types import LoadProgress, ModelInfo, ModelState, RouterState
from app.ui.state.herd_state import HerdState
from app.ui.text import format as fmt
from app.ui.text.glyphs import ASCII, UNICODE, locale_is_utf8, want_ascii
from app.ui.widgets.table_rows import CellSpec, diff_rows
from tests.helpers.standin_fleet import NOW, view


def test_sizes_counts_durations() -> None:
    assert fmt.human_bytes(512) == "512B"
    assert fmt.human_bytes(3 * 1024**3) == "3.0G"
    assert fmt.human_bytes(40 * 1024**3) == "40G"
    assert fmt.human_count(7_240_000_000) == "7.2B"
    assert fmt.human_count(111_000) == "111K"
    assert fmt.human_ctx(4096) == "4096"
    assert fmt.human_ctx(32768) == "32k"
    assert [fmt.duration(s) for s in (5, 125, 3 * 3600 + 420, 5 * 86400 + 7200)] == ["5s", "2m05s", "3h07m", "5d02h"]


def test_badges_cover_every_state() -> None:
    g = UNICODE
    assert fmt.badge(ModelInfo("m", ModelState.LOADED), g)[0] == "● loaded"
    loading = ModelInfo("m", ModelState.LOADING, progress=LoadProgress(("text_model",), "text_model", 0.5))
    assert "50%" in fmt.badge(loading, g)[0]
    failed = ModelInfo("m", ModelState.UNLOADED, exit_code=1, failed=True)
    assert fmt.badge(failed, g) == ("✖ failed (exit 1)", "bold red")
    assert "sleeping" in fmt.badge(ModelInfo("m", ModelState.SLEEPING), g)[0]
    assert "downloading" in fmt.badge(ModelInfo("m", ModelState.DOWNLOADING), g)[0]
    assert fmt.badge(ModelInfo("m", ModelState.UNLOADED), ASCII)[0] == "o unloaded"


def test_vision_is_three_state() -> None:
    assert fmt.vision(ModelInfo("m", ModelState.UNLOADED))[0] == "?"
    assert fmt.vision(ModelInfo("m", ModelState.LOADED))[0] == "no"
    assert fmt.vision(ModelInfo("m", ModelState.UNLOADED, input_modalities=("text", "image")))[0] == "yes"
    assert fmt.vision(ModelInfo("m", ModelState.LOADING))[0] == "?"


def test_router_and_connection_words() -> None:
    assert fmt.router_text(view("a", started_at=NOW - 65), NOW)[0] == "running 1m"
    exited = view("a", router_state=RouterState.EXITED, exit_code=137, router_reason="killed")
    assert fmt.router_text(exited, NOW)[0] == "exited with code 137: killed"
    assert fmt.router_text(view("a", router_state=RouterState.STOPPED), NOW)[0] == "stopped on request"
    old = view("a", router_state=RouterState.ATTACHED, stream="polling")
    assert fmt.router_text(old, None)[0] == "attached · polling, no SSE"
    down = view("a", host="h", connection=Connection.UNREACHABLE, connection_reason="no route to host")
    assert fmt.connection_text(down)[0] == "unreachable: no route to host"
    assert fmt.is_down(down)


def test_bars_and_sparklines() -> None:
    assert UNICODE.bar(0.5, 4) == "██··"
    assert UNICODE.bar(1.0, 3) == "███"
    assert len(UNICODE.bar(0.33, 7)) == 7
    assert ASCII.bar(0.5, 4) == "##.."
    assert ASCII.sparkline([0, 50, 100], 5) == "  _=#"
    assert UNICODE.sparkline([0, 100], 2) == "▁█"
    assert ASCII.clip("abcdefgh", 5) == "abcd~"


def test_ascii_detection() -> None:
    assert not want_ascii(False, {"LANG": "en_US.UTF-8"})
    assert want_ascii(True, {"LANG": "en_US.UTF-8"})
    assert want_ascii(False, {"LANG": "en_US.UTF-8", "LLAMAHERD_ASCII": "1"})
    assert want_ascii(False, {"LANG": "C"})
    assert want_ascii(False, {"LANG": "en_US.UTF-8", "LC_ALL": "POSIX"})  # LC_ALL wins
    assert not want_ascii(False, {"LC_CTYPE": "de_DE.utf8"})
    assert not locale_is_utf8({})  # nothing set is the C locale
    # LANG=C as Python sees it after its own locale coercion (PEP 538): still not a UTF-8 terminal.
    assert want_ascii(False, {"LANG": "C", "LC_CTYPE": "C.UTF-8"}, utf8_mode=True)
    assert not want_ascii(False, {"LANG": "C", "LC_CTYPE": "C.UTF-8"}, utf8_mode=False)


def test_keyed_diff() -> None:
    a = (CellSpec("a"), CellSpec("loaded"))
    b = (CellSpec("b"), CellSpec("unloaded"))
    c = (CellSpec("c"), CellSpec("loading"))
    d = diff_rows({"a": a, "b": b}, {"a": a, "b": (CellSpec("b"), CellSpec("loading")), "c": c})
    assert d.add == (("c", c),)
    assert d.remove == ()
    assert d.update == (("b", 1, CellSpec("loading")),)
    assert not diff_rows({"a": a}, {"a": a})
    assert diff_rows({"a": a, "b": b}, {"b": b}).remove == ("a",)


def test_state_keeps_a_problem_until_it_is_fixed() -> None:
    st = HerdState(["box"])
    ch = st.apply([MachineChanged("box", view("box")), Problem("box", "broken failed\nlog line", model="broken")], NOW)
    assert ch.cards == {"box"} and len(ch.problems) == 1
    assert st.get("box").problem == "broken failed"
    st.apply([ModelsChanged("box", (ModelInfo("broken", ModelState.UNLOADED, exit_code=1, failed=True),))], NOW)
    assert st.get("box").problem  # still failed: still shown
    st.apply([ModelsChanged("box", (ModelInfo("broken", ModelState.LOADING),))], NOW)
    assert not st.get("box").problem  # tried again: the card stops shouting


def test_cpu_history_is_a_minute() -> None:
    st = HerdState(["box"])
    stats = HostStats(cpu_pct=10, mem_used=1, mem_total=2, load_avg=(0, 0, 0))
    st.apply([HostStatsChanged("box", stats)], NOW - 90)
    st.apply([HostStatsChanged("box", HostStats(50, 1, 2, (0, 0, 0)))], NOW - 30)
    assert st.get("box").cpu_history(NOW) == [50]


def test_vision_said_outlives_the_run() -> None:
    # Unloaded again after it said "no": still "no"; a preset that now offers a projector says "yes".
    assert fmt.vision(ModelInfo("m", ModelState.UNLOADED, vision_said=False))[0] == "no"
    offered = ModelInfo("m", ModelState.UNLOADED, input_modalities=("text", "image"), vision_said=False)
    assert fmt.vision(offered)[0] == "yes"
    # It said "yes" but the offline arrays no longer have pictures (its projector removed): not known.
    assert fmt.vision(ModelInfo("m", ModelState.UNLOADED, vision_said=True))[0] == "?"


def test_a_wrapped_text_cut_short_ends_with_one_ellipsis() -> None:
    """`[Errno -2] ……` (issue 38, case 8): a short last line got two."""
    from app.ui.text.glyphs import ASCII, UNICODE

    assert UNICODE.wrap("[Errno -2] Name-or-service-not-known", 14, 1) == ["[Errno -2] …"]
    assert UNICODE.wrap("[Errno -2] Name or service not known", 20, 1) == ["[Errno -2] Name or …"]
    assert UNICODE.wrap("abcdefghij klmnopqrst uvw", 10, 1) == ["abcdefghi…"]
    assert UNICODE.wrap("a b", 10, 1) == ["a b"]  # nothing cut, no ellipsis
    assert all(line.count("…") <= 1 for n in range(4, 30) for line in UNICODE.wrap("word " * 20, n, 2))
    assert ASCII.wrap("[Errno -2] Name or service not known", 14, 1)[0].count(ASCII.ellipsis) == 1
