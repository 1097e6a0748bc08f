"""The hub screen (key p): search the selected machine's hub from here, see a repo's GGUF files by quant with their
size and a fit verdict for that machine, and pull one (Enter) through the machine's router. The pull goes on in the
background after the screen closes: its row in the model table shows the progress, `u` on it cancels.

Everything shown comes from the hub (repo names, file names) and is shown as plain text.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable
from typing import ClassVar, Protocol, runtime_checkable

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Input, Static

from app.services.core.errors import HerdError
from app.services.hub.hub_api import RepoHit
from app.services.hub.progress import PullProgress, human_bytes
from app.services.hub.pull import PullOutcome
from app.services.hub.search import RepoChoices
from app.ui.text.format import BAD, DIM
from app.ui.text.plain_text import plain

VERDICT_STYLE = {"fits": "green", "tight": "yellow", "no": "bold red", "unknown": DIM}
# Bound: the pullable names the palette offers ("Pull REPO:QUANT on MACHINE"), the latest listed first.
RECENT_CHOICES = 50
recent_choices: deque[tuple[str, str, str]] = deque(maxlen=RECENT_CHOICES)
"""(machine, repo:quant, fit line) of the quants this dashboard listed lately: the palette's pull entries."""


@runtime_checkable
class HubFleet(Protocol):
    """What the screen needs of app.services.fleet.Fleet."""

    async def hub_search(self, machine: str, query: str) -> list[RepoHit]: ...

    async def hub_repo(self, machine: str, repo: str) -> RepoChoices: ...

    async def pull(
        self, machine: str, spec: str, on_progress: Callable[[PullProgress], None] | None = None
    ) -> PullOutcome: ...


def start_pull(
    fleet: HubFleet,
    machine: str,
    spec: str,
    run: Callable[[Awaitable[None]], object],
    tell: Callable[[str, bool], None],
) -> None:
    """A pull run by the app (it outlives the screen), its outcome told in one line when it ends."""

    async def pull() -> None:
        try:
            o = await fleet.pull(machine, spec)
        except HerdError as e:
            tell(f"pull {spec} on {machine}: {e}", False)
            return
        if o.ok:
            tell(f"{machine}: {o.cause}; load it with l", True)
        else:
            tell(f"pull {spec} on {machine} failed: {o.cause}", False)

    tell(f"pulling {spec} on {machine}: its row shows the progress, u cancels", True)
    run(pull())


class HubScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", id="hub_close"),
        Binding("slash", "search", "Search", id="hub_search"),
    ]

    DEFAULT_CSS = """
    HubScreen { align: center middle; }
    HubScreen #hub-box { width: 90%; height: 85%; border: round $accent; background: $surface; padding: 0 1; }
    HubScreen #hub-table { height: 1fr; }
    HubScreen #hub-status { height: auto; min-height: 1; }
    """

    def __init__(self, fleet: HubFleet, machine: str, hub_url: str, pull: Callable[[str, str], None]) -> None:
        super().__init__()
        self.fleet = fleet
        self.machine = machine
        self.hub_url = hub_url
        self._pull = pull
        self.rows: list[tuple[str, str]] = []  # per table row: ("repo", id) or ("quant", repo:quant) or ("", "")

    def compose(self) -> ComposeResult:
        with Vertical(id="hub-box"):
            yield Input(placeholder="search words, or OWNER/REPO for its files", id="hub-query")
            yield DataTable(id="hub-table", cursor_type="row")
            yield Static("", id="hub-status")

    def on_mount(self) -> None:
        box = self.query_one("#hub-box", Vertical)
        box.border_title = f"hub · {self.machine} · {self.hub_url}"
        self.query_one("#hub-query", Input).focus()
        self._status("type words and Enter to search; Enter on a repo lists its files; Enter on a file pulls it")

    def _status(self, text: str, style: str = DIM) -> None:
        self.query_one("#hub-status", Static).update(plain(text, style))

    def _table(self) -> DataTable[Text]:
        table: DataTable[Text] = self.query_one("#hub-table", DataTable)
        return table

    def on_input_submitted(self, event: Input.Submitted) -> None:
        query = event.value.strip()
        if not query:
            return
        if "/" in query:
            self.list_repo(query)
        else:
            self.search(query)

    @work(group="hub-ask", exclusive=True, exit_on_error=False)
    async def search(self, query: str) -> None:
        self._status(f"searching {self.hub_url} for {query!r} …")
        try:
            hits = await self.fleet.hub_search(self.machine, query)
        except HerdError as e:
            self._status(str(e), BAD)
            return
        table = self._table()
        table.clear(columns=True)
        table.add_columns("repo", "downloads")
        self.rows = [("repo", h.id) for h in hits]
        for h in hits:
            table.add_row(plain(h.id, "bold"), plain("" if h.downloads is None else str(h.downloads), DIM))
        table.focus()
        self._status(f"{len(hits)} repo(s) with GGUF files; Enter lists one's files" if hits else "no repo matches")

    @work(group="hub-ask", exclusive=True, exit_on_error=False)
    async def list_repo(self, repo: str) -> None:
        self._status(f"reading {repo}'s files and their headers …")
        try:
            choices = await self.fleet.hub_repo(self.machine, repo)
        except HerdError as e:
            self._status(str(e), BAD)
            return
        table = self._table()
        table.clear(columns=True)
        table.add_columns("file", "size", f"fit on {self.machine}")
        self.rows = []
        listing = choices.listing
        for q in listing.quants:
            name = f"{listing.repo}:{q.quant}"
            fit = choices.fits.get(q.quant)
            verdict = fit.verdict if fit else "unknown"
            line = fit.line if fit else (choices.note or "unknown")
            shards = f" ({len(q.paths)} files)" if len(q.paths) > 1 else ""
            table.add_row(plain(name, "bold"), plain(human_bytes(q.size) + shards), plain(line, VERDICT_STYLE[verdict]))
            self.rows.append(("quant", name))
            for seen in [c for c in recent_choices if c[:2] == (self.machine, name)]:
                recent_choices.remove(seen)
            recent_choices.appendleft((self.machine, name, line))
        for v in listing.vision:
            table.add_row(plain(f"  {v.first}", DIM), plain(human_bytes(v.size), DIM),
                          plain("vision companion: fetched with a quant", DIM))  # fmt: skip
            self.rows.append(("", ""))
        table.focus()
        self._status(choices.note or f"{len(listing.quants)} quant(s); Enter pulls one onto {self.machine}")

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if not 0 <= event.cursor_row < len(self.rows):
            return
        kind, name = self.rows[event.cursor_row]
        if kind == "repo":
            self.query_one("#hub-query", Input).value = name
            self.list_repo(name)
        elif kind == "quant":
            self._pull(self.machine, name)
            self.dismiss(None)

    def action_search(self) -> None:
        self.query_one("#hub-query", Input).focus()

    def action_close(self) -> None:
        self.dismiss(None)
