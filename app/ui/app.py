"""HerdApp: the dashboard. Layout, bindings, and the one worker that turns fleet events into screen updates.

Nothing here waits on a machine: every Fleet command is awaited in a worker, and events go through LiveFeed
(live.py), which folds them into HerdState and paints at most every 50 ms, so a burst costs few repaints.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import ClassVar, Protocol, runtime_checkable

from rich.text import Text
from textual import events, on, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.scrollbar import ScrollBar, ScrollBarRender
from textual.widgets import ContentSwitcher, DataTable, Footer, Input, Static
from textual.worker import Worker, WorkerState

from app.config import Config
from app.services.binary import HOW_TO_GET
from app.services.errors import HerdError
from app.services.types import Connection, FleetEvent, RouterState
from app.ui.confirm import ConfirmScreen
from app.ui.fleet_api import FleetApi
from app.ui.fleet_table import FleetTable
from app.ui.format import BAD, BUSY, DIM, OK, is_down
from app.ui.glyphs import Glyphs, glyphs_for, want_ascii
from app.ui.help import HelpRow, HelpScreen
from app.ui.live import LiveFeed
from app.ui.logs import LogPanel, LogSearch
from app.ui.machines import FirstRunNotice, MachinesPane, first_run_text
from app.ui.model_files import ModelFilesFleet, ModelFilesScreen
from app.ui.models import KeyedTable, ModelTable
from app.ui.palette import HerdCommands
from app.ui.preset_form import PresetFleet, PresetForm
from app.ui.prompt import Prompt
from app.ui.state import Changes, HerdState

MAX_BATCH = 5000  # events taken off the queue in one go
ERROR_DEDUP_SECONDS = 5.0

_UP = (RouterState.RUNNING, RouterState.ATTACHED)
_BUSY = (RouterState.RUNNING, RouterState.STARTING, RouterState.STOPPING, RouterState.ATTACHED)


@runtime_checkable
class ProgramFleet(Protocol):
    """Optional: a fleet that can say, before any start, whether a machine has llama-server (its path, or None).

    Looking for the binary is file work, so the UI never does it itself; without this method it learns the answer
    from the refusal of a start (a ProgramNotFound).
    """

    async def llama_server_found(self, machine: str) -> str | None: ...


class AsciiScrollBarRender(ScrollBarRender):
    VERTICAL_BARS: ClassVar[list[str]] = [" "] * 8
    HORIZONTAL_BARS: ClassVar[list[str]] = [" "] * 8


class HerdApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "llamaherd"
    ENABLE_COMMAND_PALETTE = True
    COMMANDS = App.COMMANDS | {HerdCommands}
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]  # noqa: RUF012 - Textual's own declaration
    VERTICAL_BREAKPOINTS = [(0, "-short"), (32, "-tall")]  # noqa: RUF012

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("l", "load", "Load", id="load"),
        Binding("u", "unload", "Unload", id="unload"),
        Binding("r", "reload", "Reload", id="reload"),
        Binding("s", "start_router", "Start", id="start_router"),
        Binding("x", "stop_router", "Stop", id="stop_router"),
        Binding("e", "edit_preset", "Edit", id="edit_preset"),
        Binding("E", "edit_global_preset", "Edit [*]", show=False, id="edit_global_preset"),
        Binding("m", "model_files", "Files", show=False, id="model_files"),
        Binding("g", "goto_log", "Log", id="goto_log"),
        Binding("f", "toggle_fleet", "Fleet", id="toggle_fleet"),
        Binding("slash", "filter", "Filter", id="filter"),
        Binding("question_mark", "help", "Help", id="help"),
        Binding("q", "quit", "Quit", show=False, id="quit"),
        *(
            Binding(str(n), f"pick_machine({n - 1})", f"Machine {n}", show=False, id=f"machine_{n}")
            for n in range(1, 10)
        ),
    ]

    # Sentences for the help screen and the palette; a binding's own description is a footer-sized word.
    PALETTE: ClassVar[dict[str, str]] = {
        "load": "Load the selected model",
        "unload": "Unload the selected model",
        "reload": "Reload presets of the selected machine",
        "start_router": "Start the router of the selected machine",
        "stop_router": "Stop the router of the selected machine (asks first)",
        "goto_log": "Show the selected model's log lines",
        "edit_preset": "Edit the selected model's preset section",
        "edit_global_preset": "Edit the selected machine's [*] section (every model)",
        "model_files": "Model files of the selected machine: add one to the preset",
        "toggle_fleet": "Toggle the fleet view (every model on every machine)",
        "filter": "Filter the table by text",
        "help": "Show every key",
    }
    BINDING_HELP: ClassVar[dict[str, str]] = {
        **PALETTE,
        "quit": "Quit (routers keep running)",
        "sort": "Sort by the next column",
        "sort_reverse": "Reverse the sort",
        "log_follow": "Follow / pause the log",
        "log_level": "Levels shown: all, warnings+errors, errors",
        "log_model": "Only the selected model's lines, or all",
        "log_search": "Search the log",
        "machine_prev": "Previous machine",
        "machine_next": "Next machine",
    }

    def __init__(
        self,
        config: Config,
        fleet: FleetApi,
        *,
        frozen_time: float | None = None,
        manage_fleet: bool = True,
        ascii_mode: bool | None = None,
        config_path: Path | None = None,
    ) -> None:
        super().__init__()
        self.config = config
        self.fleet = fleet
        self.config_path = config_path or config.path
        """Where the config file is (or would go): said on the first run and in help."""
        self.first_run = not config.machines and list(fleet.names) == [m.name for m in config.effective_machines]
        """No machines configured: the fleet is this machine alone ("local"), and the pane says where config goes."""
        self.frozen_time = frozen_time
        self.manage_fleet = manage_fleet
        self.ascii_mode = want_ascii(config.ui.ascii) if ascii_mode is None else ascii_mode
        self.glyphs: Glyphs = glyphs_for(self.ascii_mode)
        self.state = HerdState(list(fleet.names))
        self.selected_machine = self.state.names[0] if self.state.names else ""
        self.live = LiveFeed(self.state, self.paint, self._later, self.call_after_refresh, self.now)
        self._recent_errors: dict[str, float] = {}
        self._bindings_shown: tuple[bool | None, ...] = ()
        self._title_shown = Text()
        self._notice_shown = Text()
        if config.keymap:
            self.set_keymap(config.keymap)
        # Scrollbars draw eighth-blocks at their ends; in ASCII mode the thumb is a plain coloured block. Textual
        # keeps the renderer on the class, so it is set either way: one process may build both kinds (tests do).
        ScrollBar.renderer = AsciiScrollBarRender if self.ascii_mode else ScrollBarRender

    # ---- clock ----

    def now(self) -> float:
        """Wall time for uptimes and ages; fixed when rendering must be deterministic (snapshots, screenshots)."""
        return self.frozen_time if self.frozen_time is not None else time.time()

    # ---- layout ----

    def compose(self) -> ComposeResult:
        yield Static(id="title")
        with Horizontal(id="top"):
            yield MachinesPane(list(self.state.machines.values()), self.glyphs, self.now, id="machines")
            with Vertical(id="right"):
                yield FirstRunNotice(id="first-run")
                with ContentSwitcher(initial="models", id="tables"):
                    yield ModelTable(self.glyphs, id="models")
                    yield FleetTable(self.glyphs, id="fleet")
        yield LogPanel(self.glyphs, self.config.ui.log_lines, id="logs")
        yield Prompt(id="prompt")
        yield Footer(compact=True, show_command_palette=False)

    @property
    def machines(self) -> MachinesPane:
        return self.query_one("#machines", MachinesPane)

    @property
    def model_table(self) -> ModelTable:
        return self.query_one("#models", ModelTable)

    @property
    def fleet_table(self) -> FleetTable:
        return self.query_one("#fleet", FleetTable)

    @property
    def logs(self) -> LogPanel:
        return self.query_one("#logs", LogPanel)

    @property
    def fleet_view(self) -> bool:
        return self.query_one("#tables", ContentSwitcher).current == "fleet"

    def current_table(self) -> KeyedTable:
        return self.fleet_table if self.fleet_view else self.model_table

    def on_mount(self) -> None:
        if self.ascii_mode:
            self.add_class("-ascii")
        prompt = self.query_one("#prompt", Prompt)
        prompt.display = False
        if self.frozen_time is not None:
            prompt.cursor_blink = False  # a blinking cursor makes every screenshot different
        for name in self.state.names:
            st = self.state.get(name)
            st.view = self.fleet.view(name)
            st.models = self.fleet.models(name)
            self.machines.update_machine(st)
        if self.selected_machine:
            self.select_machine(self.selected_machine)
        self._paint_title()
        self.query_one("#first-run", FirstRunNotice).display = self.first_run
        self._paint_hint()
        if self.first_run and isinstance(self.fleet, ProgramFleet):
            self._ask_for_program(self.state.names[0])
        self.model_table.focus()
        if self.frozen_time is None:
            self.set_interval(1.0, self.machines.tick)
        self.follow_fleet()

    async def on_unmount(self) -> None:
        if self.manage_fleet:
            await self.fleet.close()

    # ---- live data ----

    @work(group="fleet-events", exclusive=True, exit_on_error=False)
    async def follow_fleet(self) -> None:
        q = self.fleet.subscribe()
        try:
            if self.manage_fleet:
                await self.fleet.start()
            while True:
                batch: list[FleetEvent] = [await q.get()]
                while not q.empty() and len(batch) < MAX_BATCH:
                    batch.append(q.get_nowait())
                try:
                    self.live.absorb(batch)
                except Exception as e:  # a bug in one update must not stop the live view for good
                    self.notify(f"{type(e).__name__}: {e}", title="could not show an update", severity="error")
        finally:
            self.fleet.unsubscribe(q)

    @property
    def flushes(self) -> int:
        return self.live.flushes

    def _later(self, delay: float, callback: Callable[[], None]) -> None:
        if delay > 0:
            self.set_timer(delay, callback)
        else:
            self.call_later(callback)

    def paint(self, changes: Changes) -> None:
        """Show what a batch of events changed: only the parts it made stale."""
        with self.batch_update():
            for name in changes.cards:
                self.machines.update_machine(self.state.get(name))
            stale = is_down(self.state.get(self.selected_machine).view)
            if self.selected_machine in changes.models or stale != self.model_table.has_class("-stale"):
                self._show_models()
            if changes.models and self.fleet_view:
                self._show_fleet()
            lines = [ln for m, chunk in changes.logs if m == self.selected_machine for ln in chunk]
            if lines:
                self.logs.append(lines)
            self._paint_title()
            if changes.cards:
                self._paint_hint()
        for p in changes.problems:
            self.notify_error(p.message, f"{p.machine}: {p.model}" if p.model else p.machine)
        self.update_bindings()

    def _show_models(self) -> None:
        st = self.state.get(self.selected_machine)
        self.model_table.show(self.selected_machine, st.models, stale=is_down(st.view))

    def _show_fleet(self) -> None:
        down = frozenset(n for n, st in self.state.machines.items() if is_down(st.view))
        self.fleet_table.show({n: st.models for n, st in self.state.machines.items()}, down)

    def _paint_title(self) -> None:
        sts = list(self.state.machines.values())
        loaded = sum(1 for st in sts for m in st.models if m.state.running)
        total = sum(len(st.models) for st in sts)
        down = sum(1 for st in sts if is_down(st.view))
        t = Text.assemble(
            (f" {self.title} ", "bold reverse"),
            (f"  {len(sts)} machine{'s' if len(sts) != 1 else ''}", ""),
            (f"  {self.glyphs.dot}  ", DIM),
            (f"{loaded}/{total} models running", OK if loaded else ""),
        )
        if down:
            t.append(f"  {self.glyphs.dot}  ", DIM)
            t.append(f"{down} down", BAD)
        if t != self._title_shown:
            self._title_shown = t
            self.query_one("#title", Static).update(t)

    def _paint_hint(self) -> None:
        """The first run's notice (where the config goes), and how to get llama-server where a start lacked it."""
        missing = [n for n, st in self.state.machines.items() if st.missing_program]
        how_to = ""
        if missing:
            how_to = HOW_TO_GET if self.first_run else f"{', '.join(missing)}: {HOW_TO_GET}"
        self.machines.set_hint(Text(how_to, style=BUSY))
        if not self.first_run:
            return  # the notice stays hidden (FirstRunNotice.display, set on mount)
        here = self.state.get(self.state.names[0])
        text = first_run_text(
            config_path=str(self.config_path) if self.config_path else "config.toml",
            start_key=self._key_of_id("start_router"),
            can_start=here.view.router_state not in _BUSY,
            missing_program=here.missing_program,
        )
        if text != self._notice_shown:
            self._notice_shown = text
            self.query_one("#first-run", FirstRunNotice).update(text)

    @work(group="program", exit_on_error=False)
    async def _ask_for_program(self, machine: str) -> None:
        """Before any start: does this machine have llama-server? Asked of the fleet, which may look for it."""
        assert isinstance(self.fleet, ProgramFleet)
        try:
            found = await self.fleet.llama_server_found(machine)
        except HerdError:
            return
        self.state.get(machine).missing_program = found is None
        self.machines.update_machine(self.state.get(machine))
        self._paint_hint()

    # ---- selection ----

    def select_machine(self, name: str) -> None:
        if name not in self.state.machines:
            return
        self.selected_machine = name
        self.machines.selected = name
        self._show_models()
        self.logs.current_model = self.model_table.selected_model()
        view = self.state.get(name).view
        if view.managed:
            note = f"no log lines from {name} yet"
        else:
            note = f"{name} is attached: somebody else's router, whose log is not read from here"
        self.logs.set_source(name, self.fleet.log_lines(name), note=note)
        self.update_bindings()

    @on(MachinesPane.Picked)
    def _picked(self, event: MachinesPane.Picked) -> None:
        self.select_machine(event.machine)

    def action_pick_machine(self, index: int) -> None:
        names = self.state.names
        if 0 <= index < len(names):
            self.select_machine(names[index])

    @on(DataTable.RowHighlighted)
    def _row_moved(self, event: DataTable.RowHighlighted) -> None:
        target = self.target()
        if target is not None:
            self.logs.current_model = target[1]
        self.update_bindings()

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key):
            self.live.note_input()
        await super().on_event(event)

    def target(self) -> tuple[str, str | None] | None:
        """(machine, model) the actions apply to: the fleet view's row, or the selected machine and table row."""
        if self.fleet_view:
            sel = self.fleet_table.selected()
            return (sel[0], sel[1]) if sel else None
        if not self.selected_machine:
            return None
        return self.selected_machine, self.model_table.selected_model()

    # ---- actions ----

    DYNAMIC_ACTIONS = (
        "load", "unload", "reload", "start_router", "stop_router", "goto_log", "edit_preset", "edit_global_preset",
        "model_files",
    )  # fmt: skip

    def update_bindings(self) -> None:
        """Refresh the footer only when a key's availability changed: every refresh rebuilds the footer's widgets,
        and doing it on each flush of a 1,000-event burst tripled key latency."""
        now = tuple(self.check_action(a, ()) for a in self.DYNAMIC_ACTIONS)
        if now != self._bindings_shown:
            self._bindings_shown = now
            self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Dim footer keys that cannot apply now (a running model cannot be loaded, an attached router not stopped)."""
        if action not in self.DYNAMIC_ACTIONS:
            return True
        target = self.target()
        if target is None:
            return None
        machine, model = target
        st = self.state.get(machine)
        v = st.view
        if action == "model_files":
            return True if isinstance(self.fleet, ModelFilesFleet) and v.managed else None
        if action in ("edit_preset", "edit_global_preset"):
            if not isinstance(self.fleet, PresetFleet) or not v.managed:
                return None
            return True if action == "edit_global_preset" or model else None
        if action in ("load", "unload", "goto_log"):
            m = next((m for m in st.models if m.id == model), None)
            if m is None:
                return None
            if action == "load":
                return None if m.state.running else True
            if action == "unload":
                return True if m.state.running else None
            return True
        if action == "reload":
            return True if v.router_state in _UP else None
        if not v.managed or v.connection is Connection.UNREACHABLE:
            return None
        if action == "start_router":
            return None if v.router_state in _BUSY else True
        return True if v.router_state in (RouterState.RUNNING, RouterState.STARTING) else None

    def load(self, machine: str, model: str) -> None:
        self._fleet_call(f"load {model} on {machine}", machine, model, lambda: self.fleet.load(machine, model))

    def unload(self, machine: str, model: str) -> None:
        self._fleet_call(f"unload {model} on {machine}", machine, model, lambda: self.fleet.unload(machine, model))

    def action_load(self) -> None:
        target = self.target()
        if target and target[1]:
            self.load(target[0], target[1])

    def action_unload(self) -> None:
        target = self.target()
        if target and target[1]:
            self.unload(target[0], target[1])

    def action_reload(self) -> None:
        target = self.target()
        if target:
            m = target[0]
            self._fleet_call(f"reload presets on {m}", m, None, lambda: self.fleet.reload(m))

    def action_start_router(self) -> None:
        target = self.target()
        if target:
            m = target[0]
            self._fleet_call(f"start the router on {m}", m, None, lambda: self.fleet.start_router(m))

    def action_stop_router(self) -> None:
        target = self.target()
        if not target:
            return
        machine = target[0]
        running = self.state.get(machine).running_models()
        body = Text.assemble(("Stop the router on ", ""), (machine, "bold"), "?\n\n")
        if running:
            body.append("These models will be unloaded:\n")
            for name in running:
                body.append(f"  {self.glyphs.loaded} {name}\n", style="bold")
        else:
            body.append("No model is loaded there.\n", style=DIM)

        def answered(yes: bool | None) -> None:
            if yes:
                self._fleet_call(
                    f"stop the router on {machine}", machine, None, lambda: self.fleet.stop_router(machine)
                )

        self.push_screen(ConfirmScreen(f"stop router: {machine}", body, yes="Stop"), answered)

    def action_goto_log(self) -> None:
        target = self.target()
        if not target:
            return
        machine, model = target
        if machine != self.selected_machine:
            self.select_machine(machine)
        self.logs.current_model = model
        self.logs.show_model(model)
        self.logs.following = True
        self.logs.focus()

    def action_edit_preset(self) -> None:
        target = self.target()
        if target and target[1]:
            self.edit_preset(target[0], target[1])

    def action_edit_global_preset(self) -> None:
        target = self.target()
        if target:
            self.edit_preset(target[0], "*")

    def edit_preset(self, machine: str, section: str) -> None:
        """The preset editor on one section; it notifies the outcome itself and dismisses with the PresetResult."""
        if not isinstance(self.fleet, PresetFleet):
            return  # the snapshot stand-in fleet has no preset files
        if not self.state.get(machine).view.managed:
            self.notify(
                f"{machine} is attach-only: its preset file belongs to whoever runs that router", severity="warning"
            )
            return
        self.push_screen(PresetForm(self.fleet, machine, section))

    def action_model_files(self) -> None:
        """The machine's *.gguf files; adding one writes its preset section (the screen notifies the outcome)."""
        target = self.target()
        if not target or not isinstance(self.fleet, ModelFilesFleet):
            return  # the snapshot stand-in fleet has no files
        machine = target[0]
        if not self.state.get(machine).view.managed:
            self.notify(
                f"{machine} is attach-only: its preset file belongs to whoever runs that router", severity="warning"
            )
            return
        self.push_screen(ModelFilesScreen(self.fleet, machine))

    def action_toggle_fleet(self) -> None:
        switcher = self.query_one("#tables", ContentSwitcher)
        if self.fleet_view:
            switcher.current = "models"
            self.model_table.focus()
        else:
            self._show_fleet()
            switcher.current = "fleet"
            self.fleet_table.focus()
        self.update_bindings()

    def action_filter(self) -> None:
        table = self.current_table()
        self.query_one("#prompt", Prompt).ask("table", "filter models", table.filter_text)

    @on(LogSearch)
    def _log_search(self) -> None:
        self.query_one("#prompt", Prompt).ask("log", "search the log", self.logs.search)

    @on(Input.Changed, "#prompt")
    def _prompt_changed(self, event: Input.Changed) -> None:
        self._apply_prompt(event.value)

    @on(Input.Submitted, "#prompt")
    def _prompt_done(self) -> None:
        self._close_prompt()

    @on(Prompt.Cancelled)
    def _prompt_cancelled(self) -> None:
        prompt = self.query_one("#prompt", Prompt)
        self._apply_prompt(prompt.before)
        self._close_prompt()

    def _apply_prompt(self, value: str) -> None:
        prompt = self.query_one("#prompt", Prompt)
        if prompt.target == "table":
            self.current_table().set_filter(value)
        elif prompt.target == "log":
            self.logs.set_search(value)

    def _close_prompt(self) -> None:
        prompt = self.query_one("#prompt", Prompt)
        prompt.display = False
        if prompt.target == "log":
            self.logs.focus()
        else:
            self.current_table().focus()

    def action_help(self) -> None:
        hint = str(self.config_path) if self.config_path else "config.toml"
        self.push_screen(HelpScreen(self.binding_rows(), hint))

    # ---- fleet commands, each in a worker ----

    def _fleet_call(self, what: str, machine: str, model: str | None, call: Callable[[], Awaitable[object]]) -> None:
        async def run() -> None:
            try:
                await call()
            except HerdError as e:
                self.state.note_problem(machine, f"{what}: {e}", model, action=what, error=e)
                self.machines.update_machine(self.state.get(machine))
                self._paint_hint()
                self.notify_error(str(e), f"could not {what}")

        self.run_worker(run(), name=what, group=f"fleet-call:{machine}", exit_on_error=False)

    def get_key_display(self, binding: Binding) -> str:
        shown = super().get_key_display(binding)
        if self.ascii_mode and not shown.isascii():
            return binding.key  # "up" rather than an arrow a non-UTF-8 terminal cannot show
        return shown

    def notify_error(self, message: str, title: str) -> None:
        """A failure as a toast, once: a refused command is both raised to us and announced as a Problem event."""
        now = time.monotonic()
        self._recent_errors = {m: t for m, t in self._recent_errors.items() if now - t < ERROR_DEDUP_SECONDS}
        if any(m in message or message in m for m in self._recent_errors):
            return
        self._recent_errors[message] = now
        self.notify(message, title=title, severity="error", timeout=10, markup=False)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The one place an unexpected worker failure surfaces: as a notification, not a crash."""
        if event.state is WorkerState.ERROR:
            err = event.worker.error
            self.notify(f"{type(err).__name__}: {err}", title=f"{event.worker.name} failed", severity="error")

    # ---- bindings, for help and the palette ----

    def _binding_sources(self) -> Iterator[tuple[str, list[BindingType]]]:
        main = [b for b in self.BINDINGS if isinstance(b, Binding) and not (b.id or "").startswith("machine_")]
        yield "everywhere", list(main)
        yield "tables", KeyedTable.BINDINGS
        yield "log panel", LogPanel.BINDINGS
        yield "machines pane", MachinesPane.BINDINGS
        yield "everywhere", [b for b in self.BINDINGS if b not in main]

    def binding_rows(self) -> list[HelpRow]:
        rows: list[HelpRow] = []
        keymap = self.config.keymap
        for where, bindings in self._binding_sources():
            for b in bindings:
                if not isinstance(b, Binding) or not b.id:
                    continue
                keys = keymap.get(b.id, b.key)
                shown = ", ".join(self.get_key_display(Binding(k.strip(), "")) for k in keys.split(","))
                rows.append(HelpRow(where, shown, b.id, self.BINDING_HELP.get(b.id, b.description)))
        rows.append(HelpRow("everywhere", "ctrl+p", "command_palette", "Command palette: every action, every model"))
        rows.append(HelpRow("everywhere", "tab", "focus_next", "Next pane"))
        return rows

    def palette_actions(self) -> list[tuple[str, str, str]]:
        out = []
        for b in self.BINDINGS:
            if isinstance(b, Binding) and b.id in self.PALETTE:
                out.append((self.PALETTE[b.id], b.action, f"key {self._key_of(b)}"))
        return out

    def _key_of(self, b: Binding) -> str:
        keys = self.config.keymap.get(b.id or "", b.key)
        return self.get_key_display(Binding(keys.split(",")[0].strip(), ""))

    def _key_of_id(self, binding_id: str) -> str:
        b = next(b for b in self.BINDINGS if isinstance(b, Binding) and b.id == binding_id)
        return self._key_of(b)


def make_app(
    config: Config,
    fleet: FleetApi,
    *,
    frozen_time: float | None = None,
    ascii_mode: bool | None = None,
    config_path: Path | None = None,
) -> HerdApp:
    """The one way to build the dashboard: the CLI, the tests, the demo and the screenshot script all call this.

    `config_path` is where the config file is or would go (default: `config.path`), said on the first run.
    """
    return HerdApp(config, fleet, frozen_time=frozen_time, ascii_mode=ascii_mode, config_path=config_path)
