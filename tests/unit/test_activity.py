"""Activity figures from /metrics and /slots: parsing hostile answers, and rates from counter deltas."""

from __future__ import annotations

import math

from app.services.activity.metrics import (
    MAX_METRIC_LINE,
    MAX_METRIC_LINES,
    SPARK_POINTS,
    Rates,
    SlotsView,
    busiest_first,
    parse_metrics,
    parse_slots,
    sample_of,
)

# What this llama-server build answers (abridged to the lines used, plus their neighbours).
REAL = """\
# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed, excluding cached tokens
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 13
# TYPE llamacpp:prompt_seconds_total counter
llamacpp:prompt_seconds_total 0.001047
# TYPE llamacpp:tokens_predicted_total counter
llamacpp:tokens_predicted_total 20
# TYPE llamacpp:predicted_tokens_seconds gauge
llamacpp:predicted_tokens_seconds 4828.46
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 0
# TYPE llamacpp:requests_deferred gauge
llamacpp:requests_deferred 2
"""


def test_the_real_answer_is_read() -> None:
    m = parse_metrics(REAL)
    assert m == {
        "llamacpp:prompt_tokens_total": 13.0,
        "llamacpp:tokens_predicted_total": 20.0,
        "llamacpp:requests_processing": 0.0,
        "llamacpp:requests_deferred": 2.0,
    }


def test_hostile_metrics_lines_are_ignored_not_raised() -> None:
    text = "\n".join(
        [
            "llamacpp:tokens_predicted_total NaN",
            "llamacpp:tokens_predicted_total +Inf",
            "llamacpp:tokens_predicted_total -5",
            "llamacpp:tokens_predicted_total twelve",
            "llamacpp:tokens_predicted_total",
            "llamacpp:tokens_predicted_total 1 2 3 4",
            "\x00\xff garbage \x1b[31m",
            "llamacpp:requests_processing " + "9" * (MAX_METRIC_LINE + 10),  # over the line bound
            'llamacpp:prompt_tokens_total{slot="0 1"} 7 1700000000000',  # labels and a timestamp are fine
            "llamacpp:prompt_tokens_total 99",  # the first sample of a name wins
            "llamacpp:tokens_predicted_total 1e3",
            "llamacpp:requests_deferred 3",
        ]
    )
    m = parse_metrics(text)
    assert m == {
        "llamacpp:prompt_tokens_total": 7.0,
        "llamacpp:tokens_predicted_total": 1000.0,
        "llamacpp:requests_deferred": 3.0,
    }
    assert all(math.isfinite(v) and v >= 0 for v in m.values())


def test_metrics_past_the_line_bound_are_not_read() -> None:
    text = "junk line\n" * MAX_METRIC_LINES + "llamacpp:tokens_predicted_total 5\n"
    assert parse_metrics(text) == {}
    assert parse_metrics("junk line\n" * (MAX_METRIC_LINES - 1) + "llamacpp:tokens_predicted_total 5\n") == {
        "llamacpp:tokens_predicted_total": 5.0
    }


def test_slots_count_busy_and_in_flight_tokens_and_survive_garbage() -> None:
    body = [
        {"id": 0, "is_processing": True, "next_token": [{"n_decoded": 12}]},
        {"id": 1, "is_processing": False, "next_token": [{"n_decoded": 40}]},  # idle: its count is stale
        {"id": 2, "is_processing": True, "next_token": [{"n_decoded": True}, "x", {"n_decoded": -3}]},
        {"id": 3, "is_processing": "yes"},  # not True: not busy
        "not a slot",
        {"id": 4, "is_processing": True, "next_token": {"n_decoded": 5}},  # not a list: no tokens
    ]
    assert parse_slots(body) == SlotsView(busy=3, total=5, decoded=12)
    junk: object
    for junk in (None, {}, "[]", 3, {"slots": []}):
        assert parse_slots(junk) is None
    assert parse_slots([]) == SlotsView(0, 0, 0)


def metrics(generated: float, prompt: float = 0.0, processing: int = 0) -> dict[str, float]:
    return {
        "llamacpp:tokens_predicted_total": generated,
        "llamacpp:prompt_tokens_total": prompt,
        "llamacpp:requests_processing": float(processing),
    }


def test_rates_are_deltas_over_the_interval_not_lifetime_averages() -> None:
    r = Rates()
    first = r.update("m", "a", sample_of(10.0, metrics(1000, 500), None, 4))
    assert first.tokens_per_s is None and first.prompt_tokens_per_s is None  # one poll knows no rate
    assert first.slots_total == 4 and first.slots_busy == 0 and first.metrics
    busy = r.update("m", "a", sample_of(12.0, metrics(1100, 540, processing=1), SlotsView(1, 4, 30), 4))
    assert busy.tokens_per_s == (1130 - 1000) / 2  # in-flight tokens count at once
    assert busy.prompt_tokens_per_s == 20.0
    assert busy.slots_busy == 1 and busy.requests_processing == 1
    idle = r.update("m", "a", sample_of(14.0, metrics(1130, 540), None, 4))
    assert idle.tokens_per_s == 0.0 and idle.slots_busy == 0  # back to 0 when nothing runs
    assert idle.spark == (65.0, 0.0)


def test_a_counter_that_goes_down_is_a_new_child_not_a_negative_rate() -> None:
    r = Rates()
    r.update("m", "a", sample_of(0.0, metrics(5000), None, 1))
    after = r.update("m", "a", sample_of(2.0, metrics(10), None, 1))
    assert after.tokens_per_s == 0.0
    assert r.update("m", "a", sample_of(4.0, metrics(30), None, 1)).tokens_per_s == 10.0


def test_a_clock_that_does_not_advance_gives_no_rate() -> None:
    r = Rates()
    r.update("m", "a", sample_of(5.0, metrics(0), None, 1))
    assert r.update("m", "a", sample_of(5.0, metrics(100), None, 1)).tokens_per_s is None


def test_the_sparkline_is_bounded_and_keeps_the_newest() -> None:
    r = Rates()
    for i in range(SPARK_POINTS * 3):
        a = r.update("m", "a", sample_of(float(i), metrics(float(i * i)), None, 1))
    assert len(a.spark) == SPARK_POINTS
    n = SPARK_POINTS * 3 - 1
    assert a.spark[-1] == n * n - (n - 1) * (n - 1)  # the last interval's rate, oldest first
    assert list(a.spark) == sorted(a.spark)


def test_unloaded_models_are_forgotten_so_a_reload_starts_afresh() -> None:
    r = Rates()
    r.update("m", "a", sample_of(0.0, metrics(1), None, 1))
    r.update("m", "b", sample_of(0.0, metrics(1), None, 1))
    r.keep_only([("m", "b")])
    assert len(r) == 1
    assert r.update("m", "a", sample_of(2.0, metrics(100), None, 1)).tokens_per_s is None


def test_busiest_first() -> None:
    r = Rates()
    ends = {"quiet": 0.0, "fast": 400.0, "slow": 40.0}
    for model in ends:
        r.update("m", model, sample_of(0.0, metrics(0), None, 1))
    acts = [r.update("m", model, sample_of(2.0, metrics(end), None, 1)) for model, end in ends.items()]
    assert [a.model for a in busiest_first(acts)] == ["fast", "slow", "quiet"]
