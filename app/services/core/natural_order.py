"""Natural order for names: `m1-2` before `m1-10`, as an operator counts, not as bytes compare.

A name is cut into runs of digits and runs of the rest; digit runs compare as numbers and the rest without case.
The runs alternate from a text run (possibly empty), so two keys always compare like with like at each position.
The name itself, lowered and then as given, breaks ties (`m07` and `m7`; `A` and `a`), so the order is total.
"""

from __future__ import annotations

import re
from functools import lru_cache

_DIGITS = re.compile(r"(\d+)")

NaturalKey = tuple[tuple[str | int, ...], str, str]


@lru_cache(maxsize=65536)  # names repeat on every repaint of a table; a key is made once per name
def natural_key(name: str) -> NaturalKey:
    low = name.lower()
    parts = _DIGITS.split(low)
    runs = tuple(int(p) if i % 2 else p for i, p in enumerate(parts))
    return runs, low, name


def natural_sorted(names: list[str] | tuple[str, ...]) -> list[str]:
    return sorted(names, key=natural_key)
