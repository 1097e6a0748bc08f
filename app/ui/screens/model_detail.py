"""The model detail pane (key i, Enter or a click on a row): everything known of one model in one place.

Its preset section, its child's command line (secrets redacted), its memory (the child's RSS and GPU memory, or
why not known), its activity, the last history entries with their reasons, its fit on each machine that lists it,
whether it takes pictures, and the log lines of its last load. Shown beside the table on a wide screen (the
dashboard mounts a ModelDetail there) and as a ModelDetailScreen otherwise.

What is read from a machine (memory, the preset file) and from the history store is fetched in a worker, again
every REFRESH_EVERY seconds while the pane is shown; the timer and its worker end with the widget. Everything from
outside is shown as text, control characters visible, each piece bounded.
"""

from __future__ import annotations

import re
import shlex
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, cast

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Static

from app.services.activity.metrics import ModelActivity
from app.services.core.errors import HerdError
from app.services.core.router_types import ModelInfo
from app.services.core.textsafe import visible, visible_lines
from app.services.history.store import HistoryRow
from app.services.hosts.child_memory import ModelMemory
from app.services.presets.ini_text import PresetDoc
from app.ui.text.format import BAD, DIM, OK, badge, human_bytes, vision

if TYPE_CHECKING:
    from textual.worker import WorkType

    from app.ui.state.app_protocol import HerdApi

REFRESH_EVERY = 3.0
"""Seconds between two fetches while the pane is shown: memory moves while a model loads or serves."""
PRESET_EVERY = 15.0
"""The preset file is read again at most this often (a hand edit shows within it; over ssh each read is a trip)."""
HISTORY_ROWS = 8
LOG_LINES = 30
LOG_SCAN = 5000
"""Log lines looked back through for the model's (the scrollback holds up to 10,000 of every model)."""
TEXT_LIMIT = 4000
"""Characters of one outside text shown (a preset section, a command line); the rest is cut, and said so."""
REDACTED = "‹redacted›"
SECRET_FLAGS = frozenset({"--api-key", "--hf-token", "-hft"})
"""Flags whose value is a secret. A child never gets the router's --api-key (reference §1.3), but a preset may
name a token, and the command line is shown on screen and in screenshots."""

FitLines = Callable[[str], list[tuple[str, str]]]
"""model id -> (machine, one line of fit) for each machine that lists it (the dashboard's FitAdvisor)."""


def redacted(args: Sequence[str]) -> list[str]:
    """`args` with the value of every secret flag replaced (`--api-key K` and `--api-key=K` alike)."""
    out: list[str] = []
    hide = False
    for a in args:
        if hide:
            out.append(REDACTED)
            hide = False
            continue
        flag, eq, _ = a.partition("=")
        if flag in SECRET_FLAGS:
            out.append(f"{flag}={REDACTED}" if eq else a)
            hide = not eq
            continue
        out.append(a)
    return out


def command_line(args: Sequence[str]) -> str:
    """The command line as a shell would take it, secrets redacted (the mark itself left unquoted)."""
    return " ".join(a if a == REDACTED else shlex.quote(a) for a in redacted(args))


_SECRET_KEY = re.compile(r"^(\s*(?:api-key|hf-token|hft)\s*=).*$", re.MULTILINE)


def redacted_section(text: str) -> str:
    """A preset section with the value of every secret key replaced (a token in the file stays in the file)."""
    return _SECRET_KEY.sub(lambda m: f"{m.group(1)} {REDACTED}", text)


def bounded(text: str, limit: int = TEXT_LIMIT) -> str:
    return text if len(text) <= limit else text[:limit] + f" …[cut: {len(text) - limit} more characters]"


def memory_text(mem: ModelMemory | None, note: str) -> Text:
    if mem is None:
        return Text(note, style=DIM)
    if mem.rss is None:
        return Text.assemble(("unknown", "bold"), (f": {visible(mem.why)}", DIM))
    if mem.gpu is None:
        gpu = ("GPU not known (no nvidia-smi there)", DIM)
    else:
        gpu = (f"GPU {human_bytes(mem.gpu)}" if mem.gpu else "GPU none", "")
    pid = f" · pid {mem.pid}" if mem.pid is not None else ""
    return Text.assemble((f"RSS {human_bytes(mem.rss)}", "bold"), " · ", gpu, (pid, DIM))


def section_of(text: str, model_id: str) -> str | None:
    """The section `[model_id]` of a preset file as it is written (comments kept); None when it has none."""
    blocks = [b.text() for b in PresetDoc.parse(text).blocks if b.name == model_id]
    return "".join(blocks) if blocks else None


def activity_text(act: ModelActivity | None, spark: Callable[[Sequence[float]], str]) -> Text:
    if act is None:
        return Text("no figures (not loaded, or not polled yet)", style=DIM)
    if not act.metrics:
        return Text("no figures: its router answers no /metrics", style=DIM)
    parts = [spark(act.spark)] if act.spark else []
    parts.append("…" if act.tokens_per_s is None else f"{act.tokens_per_s:.1f} tok/s")
    if act.slots_total:
        parts.append(f"slots {act.slots_busy or 0}/{act.slots_total}")
    if act.requests_deferred:
        parts.append(f"+{act.requests_deferred} queued")
    return Text(" ".join(parts))


@dataclass
class Fetched:
    """What the worker last read for the model shown (reset when another model is shown)."""

    memory: ModelMemory | None = None
    memory_note: str = "reading…"
    history: tuple[HistoryRow, ...] = ()
    history_note: str = "reading…"
    section: str | None = None
    section_note: str = "reading…"
    section_at: float | None = None
    """When the preset file was last read (time.monotonic), None: not yet."""
    rounds: int = 0
    """Fetches finished for this model (what tests wait on)."""
    log: list[str] = field(default_factory=list)


class ModelDetail(VerticalScroll):
    """The pane's content for one (machine, model), kept fresh while it is mounted."""

    DEFAULT_CSS = """
    ModelDetail {
        border: round $foreground 30%;
        border-title-color: $foreground 70%;
        border-subtitle-color: $foreground 60%;
        scrollbar-size-vertical: 1;
        padding: 0 1;
    }
    ModelDetail:focus { border: round $accent; }
    ModelDetail > Static { width: 1fr; }
    """

    def __init__(self, fit_lines: FitLines | None = None, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.fit_lines = fit_lines
        self.machine = ""
        self.model_id = ""
        self.fetched = Fetched()
        self._timer: Timer | None = None

    @property
    def herd(self) -> HerdApi:
        return cast("HerdApi", self.app)

    def compose(self) -> ComposeResult:
        yield Static(id="detail-body")

    def on_mount(self) -> None:
        self._timer = self.set_interval(REFRESH_EVERY, self._tick)
        if self.model_id:
            self._tick()

    def on_unmount(self) -> None:
        if self._timer is not None:
            self._timer.stop()  # with the widget: no fetch for a pane nobody sees
            self._timer = None

    @property
    def refreshing(self) -> bool:
        """Whether the pane fetches again every REFRESH_EVERY seconds (while it is mounted)."""
        return self._timer is not None

    def show_model(self, machine: str, model_id: str) -> None:
        """Show this model (the dashboard calls it as its cursor moves); the same model again changes nothing."""
        if (machine, model_id) == (self.machine, self.model_id):
            return
        self.machine, self.model_id = machine, model_id
        self.fetched = Fetched()
        self.border_title = Text(visible(f"{model_id} on {machine}"))
        self.scroll_home(animate=False)
        if self.is_mounted:
            self._tick()

    def _tick(self) -> None:
        self.paint()
        # the function, not a coroutine: a worker cancelled before it ran leaves nothing unawaited
        self.run_worker(cast("WorkType[None]", self._fetch), group="model-detail", exclusive=True, exit_on_error=False)

    def model(self) -> ModelInfo | None:
        return self.herd.state.get(self.machine).by_id.get(self.model_id) if self.machine else None

    async def _fetch(self) -> None:
        key = (self.machine, self.model_id)
        got = self.fetched
        herd = self.herd
        m = self.model()
        if m is None or not m.state.running:
            got.memory, got.memory_note = None, "not loaded: no process"
        else:
            try:
                mems = await herd.fleet.model_memory(self.machine)
                got.memory = mems.get(self.model_id)
                got.memory_note = "not running now"
            except HerdError as e:
                got.memory, got.memory_note = None, f"unknown: {visible(str(e))}"
        if herd.history is None:
            got.history_note = "no history store"
        else:
            try:
                rows = await herd.history.query(machine=self.machine, model=self.model_id, limit=HISTORY_ROWS)
                got.history, got.history_note = tuple(rows), "none recorded"
            except (HerdError, OSError, sqlite3.Error) as e:  # a history that cannot be read stops nothing
                got.history_note = f"not readable: {visible(str(e))}"
        now = time.monotonic()
        if got.section_at is None or now - got.section_at >= PRESET_EVERY:
            got.section_at = now
            await self._read_section(got)
        if key == (self.machine, self.model_id) and got is self.fetched:
            got.rounds += 1
            self.paint()

    async def _read_section(self, got: Fetched) -> None:
        herd = self.herd
        if not (herd.fleet.has_files and herd.state.get(self.machine).view.managed):
            got.section, got.section_note = None, "the preset file is not reachable from here"
            return
        try:
            snap = await herd.fleet.read_preset(self.machine)
        except HerdError as e:
            got.section, got.section_note = None, f"not readable: {visible(str(e))}"
            return
        got.section = section_of(snap.text, self.model_id)
        got.section_note = f"{visible(snap.path)} has no [{visible(self.model_id)}] section"

    def log_lines(self) -> list[str]:
        """The model's lines of its last load (from the router's spawn line on), newest LOG_LINES at most."""
        lines = self.herd.fleet.log_lines(self.machine)
        start = f"spawning server instance with name={self.model_id} "
        out: list[str] = []  # newest first
        for i in range(len(lines) - 1, max(-1, len(lines) - 1 - LOG_SCAN), -1):
            ln = lines[i]
            if start in ln.text:
                out.append(ln.text)
                break
            if ln.model == self.model_id:
                out.append(f"{ln.level} {ln.text}".strip())
                if len(out) >= LOG_LINES:
                    break
        return [bounded(visible(t), 400) for t in reversed(out)]

    # ---- drawing ----

    def paint(self) -> None:
        if not self.is_mounted:
            return
        self.query_one("#detail-body", Static).update(self.detail_text())

    def detail_text(self) -> Text:
        herd, g, got = self.herd, self.herd.glyphs, self.fetched
        m = self.model()
        out = Text(no_wrap=False, overflow="fold")

        def head(name: str) -> None:
            out.append(f"\n{name}\n", style="bold underline")

        def row(name: str, value: Text | str) -> None:
            out.append(f"{name:<9}", style=DIM)
            out.append_text(value if isinstance(value, Text) else Text(value))
            out.append("\n")

        if m is None:
            out.append(f"{visible(self.model_id)} is not listed on {visible(self.machine)} now\n", style=DIM)
            return out
        text, style = badge(m, g)
        row("state", Text(text, style=style))
        vtext, vstyle = vision(m)
        row("vision", Text({"yes": "yes", "no": "no"}.get(vtext, "not known (not loaded yet)"), style=vstyle))
        row("memory", memory_text(got.memory, got.memory_note) if m.state.running else Text("not loaded", DIM))
        act = herd.state.get(self.machine).activity.get(self.model_id)
        row("activity", activity_text(act, lambda v: g.sparkline(v, 16, top=max(1.0, *v))))
        head("fit")
        fits = self.fit_lines(self.model_id) if self.fit_lines is not None else []
        for machine, line in fits:
            out.append(f"{visible(machine)}: ", style="bold")
            out.append(visible(line) + "\n")
        if not fits:
            out.append("not known here\n", style=DIM)
        head("command line")
        out.append(bounded(visible(command_line(m.args))) + "\n" if m.args else "none listed\n")
        head("preset section")
        if got.section is not None:
            out.append(bounded(visible_lines(redacted_section(got.section)).expandtabs(4)).rstrip("\n") + "\n")
        else:
            out.append(got.section_note + "\n", style=DIM)
            if m.preset:
                out.append("as the router renders it:\n", style=DIM)
                out.append(bounded(visible_lines(redacted_section(m.preset)).expandtabs(4)).rstrip("\n") + "\n")
        head("history")
        for r in got.history[-HISTORY_ROWS:]:
            when = time.strftime("%m-%d %H:%M:%S", time.localtime(r.time))
            out.append(f"{when} ", style=DIM)
            out.append(f"{visible(r.from_state)} → {visible(r.to_state)}", style="bold")
            style = BAD if r.reason in ("crashed", "router exited", "not answering") else OK
            out.append(f"  {visible(r.reason)}", style=style)
            if r.detail:
                out.append(f"  {bounded(visible(r.detail), 200)}", style=DIM)
            out.append("\n")
        if not got.history:
            out.append(got.history_note + "\n", style=DIM)
        head("log of its last load")
        lines = self.log_lines()
        if lines:
            out.append("\n".join(lines) + "\n")
        else:
            out.append("no lines of it in the log shown\n", style=DIM)
        return out


class ModelDetailScreen(ModalScreen[None]):
    """The detail pane as a screen of its own, where the dashboard has no room beside the table."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,i", "close", "Close", id="detail_close"),
    ]
    DEFAULT_CSS = """
    ModelDetailScreen { align: center middle; }
    ModelDetailScreen > ModelDetail { width: 96%; height: 92%; background: $surface; }
    """

    def __init__(self, machine: str, model_id: str, fit_lines: FitLines | None = None) -> None:
        super().__init__()
        self.pane = ModelDetail(fit_lines, id="detail-modal")
        self.pane.show_model(machine, model_id)
        self.pane.border_subtitle = "esc closes"

    def compose(self) -> ComposeResult:
        yield self.pane

    def action_close(self) -> None:
        self.dismiss(None)
