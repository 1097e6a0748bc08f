"""Reasons read from router log lines, as this llama-server build writes them (lines captured from a real router:
two loads with --models-max 1, an unload, a preset edit, and a kill -9 of a child)."""

from __future__ import annotations

from app.services.history.reasons import current_run, rel_us, transitions
from app.services.logs.parse import LogAttributor

REAL = """\
0.00.002.263 I srv  llama_server: initializing ...
0.00.031.892 I srv  llama_server: listening on http://127.0.0.1:41423
0.00.403.707 I srv          load: spawning server instance with name=alpha on port 45381
[45381] 0.00.029.079 I srv  llama_server: model loaded
0.00.517.943 I srv    unload_lru: models_max limit reached, removing LRU name=alpha
0.00.518.034 I srv        unload: stopping model instance name=alpha
0.00.525.701 I srv           run: instance name=alpha exited with status 0
0.00.525.903 I srv          load: spawning server instance with name=beta on port 51423
[51423] 0.00.027.452 I srv  llama_server: model loaded
0.00.641.490 I srv        unload: stopping model instance name=beta
0.00.697.091 I srv           run: instance name=beta exited with status 0
0.00.753.963 I srv          load: spawning server instance with name=alpha on port 53967
[53967] 0.00.200.114 I srv  llama_server: model loaded
0.01.086.248 I srv   load_models: (reload) unloading model name=alpha (source updated or removed)
0.01.086.270 I srv        unload: stopping model instance name=alpha
0.01.095.732 I srv           run: instance name=alpha exited with status 0
0.03.101.127 I srv          load: spawning server instance with name=alpha on port 47019
[47019] 0.00.237.087 I srv  llama_server: model loaded
[47019] 0.00.300.000 E srv  some_func: something went wrong \x1b]0;pwn\x07
0.05.160.440 I srv           run: instance name=alpha exited with status 1
""".splitlines()


def test_time_stamps() -> None:
    assert rel_us("0.01.135.334") == 1_135_334
    assert rel_us("125.03.000.001") == (125 * 60 + 3) * 1_000_000 + 1
    assert rel_us("") is None


def test_reasons_of_a_real_run() -> None:
    got = [(t.model, t.from_state, t.to_state, t.reason) for t in transitions(REAL)]
    assert got == [
        ("alpha", "unloaded", "loading", "requested"),
        ("alpha", "loading", "loaded", "ready"),
        ("alpha", "loaded", "unloaded", "evicted"),
        ("beta", "unloaded", "loading", "requested"),
        ("beta", "loading", "loaded", "ready"),
        ("beta", "loaded", "unloaded", "requested"),
        ("alpha", "unloaded", "loading", "requested"),
        ("alpha", "loading", "loaded", "ready"),
        ("alpha", "loaded", "unloaded", "preset reload"),
        ("alpha", "unloaded", "loading", "requested"),
        ("alpha", "loading", "loaded", "ready"),
        ("alpha", "loaded", "failed", "crashed"),
    ]
    ts = transitions(REAL)
    assert ts[2].detail.endswith("for beta") and ts[2].at_us == 525_701
    assert ts[1].at_us == 403_707 + 29_079  # the child's own clock starts at its spawn
    crash = ts[-1]
    assert crash.detail.startswith("exit status 1; last lines: srv  some_func: something went wrong")
    assert "\x1b" not in crash.detail and "\x07" not in crash.detail  # shown, never interpreted


def test_an_eviction_whose_spawn_is_not_yet_written_is_kept_without_the_name() -> None:
    cut = REAL[: REAL.index(next(ln for ln in REAL if "name=beta on port" in ln))]
    ev = [t for t in transitions(cut) if t.reason == "evicted"]
    assert len(ev) == 1 and "for" not in ev[0].detail.split(",")[-1]


def test_only_the_last_run_of_an_appended_log_counts() -> None:
    older = ["0.00.001.000 I srv  llama_server: initializing ...",
             "0.09.000.000 I srv          load: spawning server instance with name=old on port 40000"]  # fmt: skip
    got = transitions([*older, *REAL])
    assert "old" not in {t.model for t in got}
    att = LogAttributor()
    # A window that begins mid-run (no start line): a clock that goes back starts a new run.
    mid = [att.parse(x) for x in [older[1], REAL[2]]]  # 9 s, then 0.4 s
    assert current_run(mid) == mid[1:]


def test_a_router_shutting_down_stops_its_models_for_that_reason() -> None:
    lines = [
        *REAL[:4],
        "0.02.000.000 I srv    operator(): operator(): cleaning up before exit...",
        "0.02.000.100 I srv        unload: stopping model instance name=alpha",
        "0.02.010.000 I srv           run: instance name=alpha exited with status 0",
    ]
    last = transitions(lines)[-1]
    assert (last.model, last.to_state, last.reason) == ("alpha", "unloaded", "router stopped")


def test_a_spawn_written_before_the_victims_exit_line_still_names_it() -> None:
    lines = [
        *REAL[:4],
        "0.00.517.943 I srv    unload_lru: models_max limit reached, removing LRU name=alpha",
        "0.00.518.034 I srv        unload: stopping model instance name=alpha",
        "0.00.525.903 I srv          load: spawning server instance with name=beta on port 51423",
        "0.00.525.701 I srv           run: instance name=alpha exited with status 0",
    ]
    ev = [t for t in transitions(lines) if t.reason == "evicted"]
    assert len(ev) == 1 and ev[0].detail.endswith("for beta")


def test_lines_fed_a_little_at_a_time_give_what_one_read_of_all_gives() -> None:
    from app.services.history.reasons import run_reasons

    whole = transitions(REAL)
    for cut in range(1, len(REAL) + 1):  # the first line starts the run
        parser, seen = run_reasons(REAL[:cut])
        more = parser.feed_more(REAL[cut:])
        assert more is not None
        got = {(t.at_us, t.model, t.to_state): t for t in [*seen, *more, *parser.held]}
        # The eviction is said once without its "for beta" (the store then takes the longer detail by key).
        assert [(t.model, t.to_state, t.reason) for t in sorted(got.values(), key=lambda t: t.at_us)] == [
            (t.model, t.to_state, t.reason) for t in whole
        ]
        assert [t.detail for t in more if t.reason == "evicted"] in ([], [whole[2].detail])


def test_lines_of_another_run_are_not_fed_onto_the_last_one() -> None:
    from app.services.history.reasons import run_reasons

    parser, _ = run_reasons(REAL)
    assert parser.feed_more(["0.00.001.000 I srv  llama_server: initializing ..."]) is None
    parser, _ = run_reasons(REAL)
    back = "0.00.100.000 I srv          load: spawning server instance with name=x on port 1"  # the clock went back
    assert parser.feed_more([back]) is None
    parser, _ = run_reasons(REAL)
    assert parser.feed_more(["0.05.160.000 I srv        unload: stopping model instance name=x"]) == []
