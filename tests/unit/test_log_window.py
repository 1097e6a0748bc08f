"""Parsing within a budget under a flood: the newest lines kept, the rest counted, spawn lines never skipped."""

from __future__ import annotations

import tracemalloc

from app.services.core import log_lines as log_lines_mod
from app.services.core.log_lines import LogLine
from app.services.logs import parse as logs_mod
from app.services.logs.parse import LogAttributor
from app.services.logs.window import LogWindow


def srv(i: int) -> str:
    return f"0.00.{i % 1000:03d}.000 I srv  update_slots: all slots are idle, line {i:07d}"


def spawn(name: str, port: int) -> str:
    return f"0.00.040.230 I srv          load: spawning server instance with name={name} on port {port}"


def test_within_budget_everything_is_parsed() -> None:
    w = LogWindow(LogAttributor(), keep=100)
    w.add([srv(i) for i in range(60)])
    w.add([srv(i) for i in range(60, 100)])
    out = w.take()
    assert [ln.raw for ln in out] == [srv(i) for i in range(100)]
    assert w.take() == []


def test_a_flood_keeps_the_newest_and_counts_the_rest() -> None:
    w = LogWindow(LogAttributor(), keep=100)
    for start in range(0, 10_000, 250):  # chunks as a reader gets them: past 2 * keep the window folds
        w.add([srv(i) for i in range(start, start + 250)])
        assert len(w.raws) <= 2 * w.keep  # the bound beside LogWindow.raws
    out = w.take()
    markers = [ln for ln in out if ln.source == "skipped"]
    assert len(markers) == 1, "adjacent skips are folded into one marker"
    assert markers[0].skipped == 9_900 and "9,900 lines skipped" in markers[0].text
    assert [ln.raw for ln in out[1:]] == [srv(i) for i in range(9_900, 10_000)]


def test_spawn_lines_are_never_skipped_and_attribution_holds() -> None:
    att = LogAttributor()
    w = LogWindow(att, keep=10)
    chunk = [srv(i) for i in range(500)]
    chunk[123] = spawn("alpha", 41001)
    chunk[400] = spawn("beta", 41002)
    chunk += [f"[41001] 0.00.001.000 I slot x: alpha child {i}" for i in range(5)]
    chunk += [f"[41002] 0.00.001.000 I slot x: beta child {i}" for i in range(5)]
    w.add(chunk)
    out = w.take()
    assert [(ln.source, ln.skipped) for ln in out[:5]] == [
        ("skipped", 123), ("router", 0), ("skipped", 276), ("router", 0), ("skipped", 99),
    ]  # fmt: skip
    assert (out[1].model, out[3].model) == ("alpha", "beta")
    assert [ln.model for ln in out[5:]] == ["alpha"] * 5 + ["beta"] * 5
    assert att.ports == {41001: "alpha", 41002: "beta"}
    assert sum(ln.skipped for ln in out) + sum(1 for ln in out if ln.source != "skipped") == len(chunk)


def test_ten_thousand_parsed_lines_cost_under_ten_megabytes() -> None:
    """The whole cost of a line kept in a scrollback: its raw text, the parsed fields, the object."""
    att = LogAttributor()
    att.ports.update({40000 + k: f"model-{k}" for k in range(10)})
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        kept: list[LogLine] = [
            att.parse(
                f"[4{i % 10:04d}] 0.01.{i % 1000:03d}.{i % 997:03d} I slot update_slots: id  0 | task {i} | "
                f"prompt processing progress, n_past = {i}, n_tokens = 512, progress = 0.{i % 100:02d}"
            )
            for i in range(10_000)
        ]
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    cost = sum(s.size_diff for s in after.compare_to(before, "filename"))
    assert len(kept) == 10_000 and kept[-1].model == "model-9"
    assert cost <= 10 * 2**20, f"{cost / 2**20:.1f} MB for 10,000 lines"
    assert cost >= 10_000 * 100, "the measure must see the lines at all"


def test_a_line_beside_its_text_costs_one_object_sharing_its_port_and_time_place() -> None:
    """Beyond its raw text, a child line is its slotted object: the port and the time's place are shared ints
    (each was a new 32-byte int per line, a third of that cost)."""
    att = LogAttributor()
    att.ports[41001] = "alpha"
    raws = [f"[41001] 0.01.{i % 1000:03d}.{i % 997:03d} I slot update_slots: task {i}" for i in range(10_000)]
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        kept = [att.parse(r) for r in raws]
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    per_line = sum(s.size_diff for s in after.compare_to(before, "filename")) / len(kept)
    assert kept[0].port is kept[-1].port and kept[0]._time is kept[-1]._time
    assert kept[-1].time == "0.01.999.029" and kept[-1].model == "alpha"
    assert 60 <= per_line <= 120, f"{per_line:.0f} bytes a line beside its text"


def test_the_shared_ints_stay_bounded_whatever_ports_and_places_a_log_prints() -> None:
    att = LogAttributor()
    lines = [att.parse(f"[{20000 + k}] 0.00.001.002 I x") for k in range(3 * logs_mod.PORT_INTS)]
    assert len(att._port_ints) <= logs_mod.PORT_INTS
    assert lines[-1].port == 20000 + 3 * logs_mod.PORT_INTS - 1
    for k in range(2 * log_lines_mod.PACKED_KEPT):  # as many (place, length) pairs
        t = "1" * (k % 255 + 1)
        assert LogLine(raw="x" * (k // 255) + t + " y", text="y", time=t).time == t
    assert len(log_lines_mod.packed_ints) <= log_lines_mod.PACKED_KEPT
    assert LogLine(raw="ab0.00.001.002 z", text="z", time="0.00.001.002").time == "0.00.001.002"
