"""Command palette (ctrl+p): every bound action, plus "Load MODEL on MACHINE" / "Unload ..." for every known model."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import TYPE_CHECKING, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content
from textual.markup import escape

from app.services.core.textsafe import visible
from app.ui.dashboard.screen import DashboardScreen

if TYPE_CHECKING:
    from app.ui.state.app_protocol import HerdApi

Command = tuple[str, Callable[[], object], str]


PALETTE_FIT_WAIT = 1.0  # seconds the palette waits for estimates not made yet; later ones show on the next key


class HerdCommands(Provider):
    async def startup(self) -> None:
        """Estimates for every model not running (header reads, in the fit workers), awaited briefly."""
        fit = self._dashboard().fit
        fit.request_all()
        await fit.settle(PALETTE_FIT_WAIT)

    def _dashboard(self) -> DashboardScreen:
        return cast(DashboardScreen, self.app.get_screen("dashboard"))  # installed by HerdApp under that name

    def _commands(self) -> Iterator[Command]:
        dashboard = self._dashboard()
        for title, action, help_text in dashboard.palette_actions():
            yield title, partial(self.app.run_action, action, dashboard), help_text
        for machine, st in cast("HerdApi", self.app).state.machines.items():
            for m in st.models:
                # Both, whatever the state: typing "unload alpha" should always find it; the router says no if moot.
                now = f"now {m.state.value}"
                load_help = now if m.state.running else f"{now} · {dashboard.fit.preview(machine, m.id).line}"
                yield f"Load {m.id} on {machine}", partial(dashboard.load, machine, m.id), load_help
                yield f"Unload {m.id} on {machine}", partial(dashboard.unload, machine, m.id), now

    # Titles hold model ids and machine names: given as str, Textual parses them as markup (Matcher.highlight
    # too), so an id with "[/x]" raised MarkupError. They go in as Content, made visible first. Help is a str
    # that Textual always reads as markup (Content.from_markup), and it names models too ("evicts X"): escaped.
    async def discover(self) -> Hits:
        for title, callback, help_text in self._commands():
            shown = visible(title)
            yield DiscoveryHit(Content(shown), callback, text=shown, help=_help(help_text))

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, callback, help_text in self._commands():
            shown = visible(title)
            score, offsets = matcher.fuzzy_search.match(query, shown)
            if score > 0:
                content = Content(shown)
                for i in offsets:
                    if not shown[i].isspace():
                        content = content.stylize(matcher.match_style, i, i + 1)
                yield Hit(score, content, callback, text=shown, help=_help(help_text))


def _help(text: str) -> str:
    return escape(visible(text))
