"""The demo's scenario plays beside the operator: it leaves a machine they acted on alone for a while, and tries the
broken model rarely (stepped clocks), and waits while a screen is open over the dashboard."""

from __future__ import annotations

import asyncio

from app.config import Config
from app.demo import MACHINES, Traffic
from app.services.core.operator_presence import HANDS_OFF_SECONDS, OperatorHands
from tests.helpers.wait import wait_for


class LookedAtHands(OperatorHands):
    """OperatorHands that count how often the scenario looked whether a screen is open."""

    looks = 0

    @property
    def screen_open(self) -> bool:
        self.looks += 1
        return super().screen_open


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def one_round(traffic: Traffic, first: int = 0) -> list[tuple[str, str, str]]:
    return [c for i in range(first, first + len(traffic.STEPS)) if (c := traffic.choose(i))]


def test_a_machine_the_operator_acted_on_is_left_alone_for_a_while() -> None:
    clock = Clock()
    hands = OperatorHands(clock)
    traffic = Traffic(Config(), hands=hands)
    assert {m for _, m, _ in one_round(traffic)} == {dm.name for dm in MACHINES}
    hands.touched("gpu-box-b")
    clock.t += HANDS_OFF_SECONDS - 1
    steps = one_round(traffic)
    assert steps and all(m != "gpu-box-b" for _, m, _ in steps)
    clock.t += 1
    assert any(m == "gpu-box-b" for _, m, _ in one_round(traffic))


def test_the_broken_model_is_tried_once_in_several_rounds() -> None:
    traffic = Traffic(Config())
    n = len(traffic.STEPS)
    tries = [
        r for r in range(3 * traffic.BROKEN_EVERY) if any(s[2] == traffic.BROKEN for s in one_round(traffic, r * n))
    ]
    assert tries == [0, traffic.BROKEN_EVERY, 2 * traffic.BROKEN_EVERY]


async def test_the_scenario_waits_while_a_screen_is_open() -> None:
    # Nothing is asked of a router while the screen is open: the scenario never gets to choose a step.
    hands = LookedAtHands()
    hands.set_screen_open(True)
    traffic = Traffic(Config(), period=0.01, hands=hands)
    traffic.WAIT_STEP = 0.01
    chosen: list[int] = []

    def recording(step: int) -> tuple[str, str, str] | None:
        chosen.append(step)
        return None  # nothing is sent: the scenario's machines have no routers here

    traffic.choose = recording  # type: ignore[method-assign]
    task = asyncio.create_task(traffic.run())
    try:
        # three looks at the open screen: three rounds in which a scenario that did not wait would have chosen a step
        await wait_for(lambda: hands.looks >= 3, 10, step=0.01, what="the scenario looking at the open screen")
        assert chosen == []
        hands.set_screen_open(False)
        await wait_for(lambda: len(chosen) >= 2, 10, step=0.01)
        assert chosen[:2] == [0, 1]  # it goes on where it was
    finally:
        task.cancel()
