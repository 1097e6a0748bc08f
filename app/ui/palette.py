"""Command palette (ctrl+p): every bound action, plus "Load MODEL on MACHINE" for every model not running and
"Unload ..." for every one running (a load asks exactly what `l` asks), and "Pull REPO:QUANT on MACHINE" for the
quants the hub screen listed lately; then, after llamaherd's own and named as Textual's, the few of Textual's own
commands an operator has use for (Theme, Screenshot, Quit). Keys and Maximize are left out: `?` lists every key."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import TYPE_CHECKING, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content
from textual.markup import escape

from app.services.core.textsafe import visible
from app.ui.dashboard.hub_action import pull
from app.ui.dashboard.screen import DashboardScreen
from app.ui.screens.hub import recent_choices

if TYPE_CHECKING:
    from app.ui.state.app_protocol import HerdApi

Command = tuple[str, Callable[[], object], str]


TEXTUAL_KEPT = ("Theme", "Screenshot", "Quit")
"""Textual's system commands offered (after llamaherd's, as "Textual: ..."): Keys and Maximize only get in the way."""

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
                # Only what applies: no load for a model already running, no unload for one that is not.
                now = f"now {m.state.value}"
                if m.state.running:
                    yield f"Unload {m.id} on {machine}", partial(dashboard.unload, machine, m.id), now
                else:
                    load = partial(dashboard.fit.load_asking, machine, m.id, dashboard.load)  # asks as `l` asks
                    yield f"Load {m.id} on {machine}", load, f"{now} · {dashboard.fit.preview(machine, m.id).line}"
        herd = cast("HerdApi", self.app)
        for machine, name, fit_line in list(recent_choices):  # the quants the hub screen listed lately
            yield f"Pull {name} on {machine}", partial(pull, self.app, herd, machine, name), fit_line
        for cmd in self.app.get_system_commands(dashboard):  # Textual's own, last, named as such
            if cmd.title in TEXTUAL_KEPT:
                yield f"Textual: {cmd.title}", cmd.callback, cmd.help

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
