"""The reaches into Textual's internals (app/ui/patches/textual_internals.py) still do what they are for, on small
apps of their own: each test fails when an upgrade of Textual makes one a no-op, or fixes what it works around.
The styles-cache bound is tested in test_styles_cache_fix.py, the toasts' in test_toast_bound.py."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from app.ui.patches.textual_internals import footer_keys, prune_closed_watchers, set_key_disabled
from tests.helpers.wait import wait_for


class Bound(Widget):
    compact: reactive[bool] = reactive(False)


class Host(Widget):
    """As Footer: each key it composes is data-bound to its `compact`, which never changes."""

    compact: reactive[bool] = reactive(False)

    def compose(self) -> ComposeResult:
        yield Bound().data_bind(Host.compact)


class HostApp(App[None]):
    def compose(self) -> ComposeResult:
        yield Host()


def watchers_of(node: Widget) -> list[tuple[Widget, object]]:
    return list(getattr(node, "__watchers", {}).get("compact", []))


async def test_the_watchers_of_removed_widgets_stay_until_pruned() -> None:
    app = HostApp()
    async with app.run_test() as pilot:
        host = app.query_one(Host)
        for _ in range(3):
            first = host.query_one(Bound)
            host.refresh(recompose=True)  # in Host's own turn, as Footer recomposes
            await wait_for(lambda first=first: host.query_one(Bound) is not first, pilot=pilot)  # type: ignore[misc]
        await pilot.pause()
        closed = [n for n, _cb in watchers_of(host) if n._closing or n._closed]
        # Textualize/textual#6666 still open in the pinned Textual: once this fails, the prune can go.
        assert len(closed) == 3, watchers_of(host)
        assert prune_closed_watchers(host) == 3
        assert [n for n, _cb in watchers_of(host)] == [host.query_one(Bound)]


class KeyApp(App[None]):
    ENABLE_COMMAND_PALETTE = False  # its key would be a second one in the footer
    BINDINGS = [Binding("x", "hit", "Hit")]  # noqa: RUF012 - Textual's own declaration

    def __init__(self) -> None:
        super().__init__()
        self.hits = 0
        self.bells = 0

    def compose(self) -> ComposeResult:
        yield Footer()

    def action_hit(self) -> None:
        self.hits += 1

    def bell(self) -> None:
        self.bells += 1


async def test_a_footer_key_set_disabled_rings_the_bell_instead_of_acting() -> None:
    app = KeyApp()
    async with app.run_test() as pilot:
        await wait_for(lambda: bool(footer_keys(app.query_one(Footer))), pilot=pilot)
        await pilot.pause(0.3)  # the footer recomposes once more as the bindings settle
        [key] = footer_keys(app.query_one(Footer))
        assert isinstance(key, FooterKey) and key.action == "hit"
        set_key_disabled(key, True)
        await pilot.click(key)
        # a click on a FooterKey rings the bell or acts, never both: once the bell rang, the click was handled
        await wait_for(lambda: app.bells == 1, pilot=pilot, what="the bell")
        assert (app.bells, app.hits) == (1, 0)
        set_key_disabled(key, False)
        await pilot.click(key)
        await wait_for(lambda: app.hits == 1, pilot=pilot)
        assert app.bells == 1


def test_the_scroll_update_reached_into_still_exists() -> None:
    """set_scroll_extent sets virtual_size without its watcher (a layout pass) and tells the scrollbars itself,
    through ScrollView._scroll_update: an upgrade that renames it would leave the scrollbars stale, silently."""
    from textual.scroll_view import ScrollView

    assert callable(getattr(ScrollView, "_scroll_update", None))
