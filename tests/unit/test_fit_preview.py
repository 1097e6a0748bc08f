"""What `l` and the palette say before a load: the verdict line and when to ask first (pure)."""

from __future__ import annotations

from app.services.core.router_types import ModelState
from app.services.fit.preview import file_line, preview
from tests.unit.test_fit_capacity import est, m, stats

GIB = 1 << 30


def test_fits_with_room_loads_without_asking_and_names_the_numbers() -> None:
    models = [m("a", ModelState.UNLOADED)]
    p = preview("box", "a", models, 4, stats(used=2 * GIB, total=10 * GIB), est(3 * GIB))
    assert p.verdict == "fits" and not p.ask
    assert p.line.startswith("fits · needs 3.0 GiB of 8.0 GiB free RAM · estimate: weights")


def test_eviction_asks_first_naming_the_victim_and_what_it_gives_back() -> None:
    models = [m("a", ModelState.UNLOADED), m("b", ModelState.LOADED)]
    p = preview("box", "a", models, 1, stats(used=8 * GIB, total=10 * GIB), est(3 * GIB), victim_est=est(4 * GIB))
    assert p.verdict == "fits" and p.evicts == ("b",)  # 2 GiB free now + 4 GiB given back
    assert (
        p.question == "a needs ~3.0 GiB, 2.0 GiB free on box; loading evicts b (LRU), which gives back ~4.0 GiB. "
        "Load anyway?"
    )


def test_no_fit_without_eviction_asks_and_says_models_max_would_allow_it() -> None:
    models = [m("a", ModelState.UNLOADED)]
    p = preview("box", "a", models, 0, stats(used=8 * GIB, total=10 * GIB), est(3 * GIB))
    assert p.verdict == "no" and p.question == "a needs ~3.0 GiB, 2.0 GiB free on box; it does not fit. Load anyway?"


def test_unknown_fit_asks_only_for_an_eviction() -> None:
    models = [m("a", ModelState.UNLOADED), m("b", ModelState.LOADED), m("c", ModelState.SLEEPING)]
    quiet = preview("box", "a", models, 4, stats(used=1, total=10 * GIB), None, "x.gguf: missing")
    assert quiet.verdict == "unknown" and not quiet.ask and quiet.line.startswith("fit unknown (x.gguf: missing)")
    full = preview("box", "a", models, 2, None, None, "x.gguf: missing")
    assert full.ask and "evicts one of b, c" in full.question and "free memory not known yet" in full.line


def test_a_running_model_has_nothing_to_load() -> None:
    p = preview("box", "b", [m("b", ModelState.LOADED)], 1, None, None)
    assert p.verdict == "running" and not p.ask


def test_file_line_gives_the_estimate_and_what_it_meets() -> None:
    line = file_line("box", est(3 * GIB), stats(used=8 * GIB, total=10 * GIB))
    assert line.startswith("estimate ~3.0 GiB: weights 3.0 GiB + KV 0 KiB (ctx 256)")
    assert line.endswith("no on box: needs 3.0 GiB of 2.0 GiB free RAM")
    assert "not known yet" in file_line("box", est(3 * GIB), None)
