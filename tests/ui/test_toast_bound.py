"""The notification backlog is bounded: a storm of notices keeps the newest MAX_TOASTS, as toasts and as records."""

from __future__ import annotations

import gc

from textual.widgets._toast import Toast, ToastHolder

from app.config import Config
from app.ui.app import make_app
from app.ui.patches.toast_bound import MAX_TOASTS, beyond_bound
from tests.ui.screen import wait_for
from tests.ui.standin import demo_fleet


def test_beyond_bound_is_the_oldest_past_the_newest_few() -> None:
    assert beyond_bound(range(10), keep=6) == [0, 1, 2, 3]
    assert beyond_bound(range(3), keep=6) == []


def holders_alive() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, ToastHolder) and o.is_attached)


async def test_a_storm_of_notices_keeps_the_newest_few() -> None:
    app = make_app(Config(), demo_fleet())
    async with app.run_test(size=(140, 45), notifications=True) as pilot:
        await pilot.pause(0.2)
        storm = MAX_TOASTS * 8
        for i in range(storm):
            app.notify(f"notice {i}", timeout=60)
            if i % 5 == 0:
                await pilot.pause(0.02)  # some arrive while the last ones are being mounted
        await wait_for(pilot, lambda: any(str(t._notification.message) == f"notice {storm - 1}"
                                          for t in app.screen.query(Toast)))  # fmt: skip
        await pilot.pause(0.2)
        shown = [t._notification.message for t in app.screen.query(Toast)]
        assert shown == [f"notice {i}" for i in range(storm - MAX_TOASTS, storm)]
        assert len(app._notifications) == MAX_TOASTS
        assert len(app.screen.query(ToastHolder)) == MAX_TOASTS  # no empty holders left behind
        assert holders_alive() <= MAX_TOASTS
