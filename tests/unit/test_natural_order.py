"""Natural order: numbers inside names compare as numbers, case aside, and the order is total."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from app.services.core.natural_order import natural_key, natural_sorted


def test_numbers_in_names_compare_as_numbers() -> None:
    names = ["m1-10", "m1-2", "m1-1", "m10-1", "m2-1", "M1-3", "m1-11"]
    assert natural_sorted(names) == ["m1-1", "m1-2", "M1-3", "m1-10", "m1-11", "m2-1", "m10-1"]


def test_quants_and_repos_sort_as_read() -> None:
    names = ["qwen3-8b:Q8_0", "qwen3-14b:Q4_K_M", "qwen3-8b:Q4_K_M", "gemma-3-4b", "gemma-3-27b"]
    assert natural_sorted(names) == [
        "gemma-3-4b", "gemma-3-27b", "qwen3-8b:Q4_K_M", "qwen3-8b:Q8_0", "qwen3-14b:Q4_K_M",
    ]  # fmt: skip


def test_leading_zeros_and_case_still_give_a_total_order() -> None:
    assert natural_sorted(["m7", "m07", "a", "A"]) == ["A", "a", "m07", "m7"]
    assert natural_key("m07") != natural_key("m7")


@given(st.lists(st.text(alphabet="ab019-:._ ", max_size=8), max_size=12))
def test_any_names_sort_without_error_and_stably(names: list[str]) -> None:
    once = natural_sorted(names)
    assert natural_sorted(once) == once
    assert sorted(once) == sorted(names)
