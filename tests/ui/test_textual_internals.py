"""The reaches into Textual's internals (app/ui/patches/textual_internals.py) still do what they are for, on small
apps of their own: each test fails when an upgrade of Textual makes one a no-op, or fixes what it works around.
The styles-cache bound is tested in test_styles_cache_fix.py, the toasts' in test_toast_bound.py."""

from __future__ import annotations

import pytest
from rich.text import Span, Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.reactive import reactive
from textual.screen import Screen
from textual.style import Style as TextualStyle
from textual.widget import Widget
from textual.widgets import Footer, Input, Static
from textual.widgets._footer import FooterKey

from app.ui.patches.textual_internals import (
    TEXTUAL_FROM_RICH_TEXT,
    TEXTUAL_INPUT_WATCH_VALUE,
    footer_keys,
    prune_closed_watchers,
    read_text_styles_as_rich,
    set_key_disabled,
    type_without_layout,
)
from app.ui.text.format import BAD, DIM
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


class StyledStatics(App[None]):
    def compose(self) -> ComposeResult:
        yield Static(Text("dim words", style=DIM), id="own")
        yield Static(Text("dim words", spans=[Span(0, 9, DIM)]), id="span")
        yield Static(Text("bad words", style=BAD), id="bad")


def _colours(app: App[None], wid: str) -> set[str | None]:
    """The foreground colours of the words on a Static's first line (None: the plain foreground)."""
    segments = app.query_one(f"#{wid}", Static).render_line(0)
    return {seg.style.color.name if seg.style and seg.style.color else None for seg in segments if seg.text.strip()}


def test_textual_still_keeps_a_texts_own_style_as_a_string() -> None:
    """Retire read_text_styles_as_rich when this fails: Textual then reads a Text's own style as Rich does."""
    content = TEXTUAL_FROM_RICH_TEXT(Content, Text("x", style=DIM), None)
    assert [s.style for s in content.spans] == [DIM]  # a string, read later by Textual's CSS parser
    with pytest.raises(Exception, match="bright_black"):
        TextualStyle.parse(DIM)


async def test_a_texts_own_style_is_drawn_as_its_spans_are() -> None:
    read_text_styles_as_rich()
    app = StyledStatics()
    async with app.run_test(size=(30, 5)) as pilot:
        await pilot.pause()
        # format.DIM is the ANSI palette's bright black, whether it is the Text's own style or a span's
        assert _colours(app, "own") == _colours(app, "span") == {"color(8)"}
        assert _colours(app, "bad") == {"color(1)"}  # the palette's red, as in the tables, not CSS #ff0000


class OneInput(App[None]):
    def compose(self) -> ComposeResult:
        yield Input()


async def _layouts_while_typing(monkeypatch: pytest.MonkeyPatch) -> tuple[int, Input]:
    """Layouts of the screen done while three keys are typed into an Input."""
    layouts = 0
    textual_refresh_layout = Screen._refresh_layout

    def counted(screen: Screen[object], *args: object, **kwargs: object) -> None:
        nonlocal layouts
        layouts += 1
        textual_refresh_layout(screen, *args, **kwargs)  # type: ignore[arg-type]

    app = OneInput()
    async with app.run_test(size=(30, 5)) as pilot:
        field = app.query_one(Input)
        field.focus()
        await pilot.pause()
        monkeypatch.setattr(Screen, "_refresh_layout", counted)
        await pilot.press("a", "b", "c")
        await pilot.pause()
        assert field.value == "abc"
        assert "abc" in "".join(s.text for s in field.render_line(0))
        return layouts, field


async def test_textual_still_lays_the_screen_out_for_each_key_typed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Retire type_without_layout when this fails: Textual's own value watcher then no longer asks for a layout."""
    monkeypatch.setattr(Input, "_watch_value", TEXTUAL_INPUT_WATCH_VALUE)
    layouts, _ = await _layouts_while_typing(monkeypatch)
    assert layouts >= 3


async def test_a_key_typed_lays_nothing_out(monkeypatch: pytest.MonkeyPatch) -> None:
    type_without_layout()
    layouts, field = await _layouts_while_typing(monkeypatch)
    assert layouts == 0
    assert field.virtual_size.width == field.content_width == 4  # the value and the cursor after it
