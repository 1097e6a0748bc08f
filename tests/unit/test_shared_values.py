"""The bounded table of shared values: equal values come back as one object, ever-new ones never pass the bound."""

from __future__ import annotations

from app.services.core.shared_values import SharedValues


def test_equal_values_come_back_as_the_first_one_seen() -> None:
    shared: SharedValues[str] = SharedValues(8)
    first = "".join(["○ ", "unloaded"])
    again = "".join(["○ un", "loaded"])
    assert first is not again
    assert shared(first) is first and shared(again) is first


def test_ever_new_values_never_pass_the_bound_and_are_still_returned_equal() -> None:
    shared: SharedValues[int] = SharedValues(100)
    for v in range(10_000, 10_350):
        assert shared(v) == v
        assert len(shared) <= 100
    assert len(shared) == 50  # emptied at 100, three times over: the last 50 kept
