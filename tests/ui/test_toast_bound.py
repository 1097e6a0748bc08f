"""The notification backlog is bounded: a storm of notices keeps the newest MAX_TOASTS, as toasts and as records
(app/ui/patches/toast_bound.py, applied through textual_internals.py; Textualize/textual#5129 asks Textual for such a
limit)."""

from __future__ import annotations

import gc

from textual.app import App
from textual.widgets._toast import Toast, ToastHolder

from app.config import Config
from app.ui.app import make_app
from app.ui.patches.textual_internals import drop_notification, live_notifications
from app.ui.patches.toast_bound import MAX_TOASTS, beyond_bound
from tests.helpers.standin_fleet import demo_fleet
from tests.helpers.wait import wait_for


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
        await wait_for(
            lambda: any(str(t._notification.message) == f"notice {storm - 1}" for t in app.screen.query(Toast)),
            pilot=pilot,
        )
        await pilot.pause(0.2)
        shown = [t._notification.message for t in app.screen.query(Toast)]
        assert shown == [f"notice {i}" for i in range(storm - MAX_TOASTS, storm)]
        assert len(app._notifications) == MAX_TOASTS
        assert len(app.screen.query(ToastHolder)) == MAX_TOASTS  # no empty holders left behind
        assert holders_alive() <= MAX_TOASTS


async def test_textual_leaves_a_dropped_toasts_holder_behind_and_drop_notification_removes_it() -> None:
    app: App[None] = App()
    async with app.run_test(notifications=True) as pilot:
        app.notify("one", timeout=60)
        app.notify("two", timeout=60)
        await wait_for(lambda: len(app.screen.query(Toast)) == 2, pilot=pilot)
        one, two = live_notifications(app)  # oldest first, as the bound takes them
        assert (one.message, two.message) == ("one", "two")
        app._unnotify(one)  # Textual's own way: the toast goes...
        await wait_for(lambda: len(app.screen.query(Toast)) == 1, pilot=pilot)
        await pilot.pause(0.1)
        # ...and its holder stays (no upstream issue found). Once this fails, drop_notification need not remove it.
        assert len(app.screen.query(ToastHolder)) == 2
        drop_notification(app, two)
        await wait_for(lambda: len(app.screen.query(ToastHolder)) == 1, pilot=pilot)
        assert not list(live_notifications(app))
