"""Each model's last change is kept for a bounded number of models per machine; past it the oldest go."""

from __future__ import annotations

from app.services.history.last_change import MAX_PER_MACHINE, LastChanges
from app.services.history.store import HistoryRow


def row(t: float, model: str, machine: str = "m") -> HistoryRow:
    return HistoryRow(t, machine, "r", model, "loading", "loaded", "requested", "")


def test_models_past_the_bound_forget_the_oldest_and_keep_the_newest() -> None:
    last = LastChanges()
    over = 50
    last.absorb(row(float(i), f"model-{i}") for i in range(MAX_PER_MACHINE + over))
    kept = last.of("m")
    assert len(kept) == MAX_PER_MACHINE
    assert "model-0" not in kept and f"model-{over - 1}" not in kept  # the oldest went
    assert f"model-{over}" in kept and f"model-{MAX_PER_MACHINE + over - 1}" in kept
    last.absorb([row(1e9, "model-new", machine="other")])
    assert len(last.of("other")) == 1  # the bound is per machine
    assert len(last.of("m")) == MAX_PER_MACHINE


def test_a_model_seen_again_is_one_entry_with_its_newest_row() -> None:
    last = LastChanges()
    last.absorb(row(float(i), "same") for i in range(1000))
    assert len(last.of("m")) == 1 and last.of("m")["same"].time == 999.0
