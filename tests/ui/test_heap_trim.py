"""After a list of BIG_LIST models or more is painted, the freed heap is given back (once, after that paint);
smaller lists and deltas leave it alone."""

from __future__ import annotations

import platform
import sys
from collections.abc import Callable

from app.services.core.fleet_events import ModelsChanged
from app.services.core.router_types import ModelInfo, ModelState
from app.ui import malloc_trim
from app.ui.live import LiveFeed
from app.ui.malloc_trim import BIG_LIST, give_back
from app.ui.state.herd_state import Changes, HerdState


def models(n: int) -> tuple[ModelInfo, ...]:
    return tuple(ModelInfo(f"m{i}", ModelState.UNLOADED) for i in range(n))


def test_a_big_list_painted_is_followed_by_one_trim() -> None:
    after_paint: list[Callable[[], None]] = []
    timers: list[Callable[[], None]] = []
    painted: list[Changes] = []
    feed = LiveFeed(
        HerdState(["box"]), painted.append, lambda _d, cb: timers.append(cb), after_paint.append, clock=lambda: 0.0
    )
    feed.absorb([ModelsChanged("box", models(BIG_LIST - 1))])
    timers.pop()()
    assert painted and give_back not in after_paint  # a smaller list: no trim
    feed.absorb([ModelsChanged("box", models(BIG_LIST))])
    timers.pop()()
    assert after_paint.count(give_back) == 1 and len(painted) == 2
    feed.absorb([ModelsChanged("box", models(BIG_LIST - 2))])
    timers.pop()()
    assert after_paint.count(give_back) == 1  # not again for the next, smaller list


def test_giving_back_runs_here() -> None:
    glibc = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"
    assert (malloc_trim._TRIM is not None) == glibc  # asked for where the C library has it, and only there
    give_back()
