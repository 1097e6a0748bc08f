"""Every machine's host-stats round wakes at the same moment: one schedule for all (their figures are painted in one
repaint), whenever each machine's previous round ended."""

from __future__ import annotations

from app.services.machine.stats_rounds import round_after


def test_rounds_of_machines_that_ended_at_different_times_meet() -> None:
    ends = [10.0, 10.3, 11.2, 11.999]  # each machine's last read ended at a different time (slow links too)
    assert {round_after(t, 2.0) for t in ends} == {12.0}


def test_a_round_is_always_ahead_and_at_most_one_interval_away() -> None:
    for now in (0.0, 0.5, 2.0, 3.99, 1e6 + 0.25):
        nxt = round_after(now, 2.0)
        assert now < nxt <= now + 2.0
