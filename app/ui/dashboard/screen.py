"""The dashboard screen: layout, what is selected and what is painted; what the keys do to the fleet is in
dashboard/actions.py (FleetActions), which the screen's actions hand the selected machine and model.

The app (app.py) owns the data: the fleet, HerdState and the live feed that folds fleet events into it. This
screen shows that state (`paint`, called by the feed at most every 50 ms) and turns keys into Fleet commands,
each awaited in a worker so nothing here waits on a machine.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, ClassVar, cast

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import ContentSwitcher, Footer, Input, Static

from app.services.core.errors import HerdError
from app.services.core.host_types import Connection
from app.services.core.textsafe import visible
from app.services.lifecycle.llama_server_binary import HOW_TO_GET
from app.ui.dashboard import keys
from app.ui.dashboard.action_feedback import ActionNotices, one_line_failure
from app.ui.dashboard.actions import FleetActions
from app.ui.dashboard.failure_history import FailureLink, with_history_key
from app.ui.dashboard.first_run_notice import FirstRunNotice, first_run_text
from app.ui.dashboard.fit_verdicts import FitAdvisor
from app.ui.dashboard.fleet_table import FleetTable, fleet_key
from app.ui.dashboard.footer import QuietFooter
from app.ui.dashboard.log_panel import LogPanel
from app.ui.dashboard.machines_pane import MachinesPane
from app.ui.dashboard.model_table import KeyedTable, ModelTable
from app.ui.dashboard.prompt import Prompt
from app.ui.dashboard.reason_cells import reason_note, reason_notes
from app.ui.dashboard.repeat_failures import RepeatedFailures
from app.ui.dashboard.unreachable_notice import UnreachableNotices, unreachable_sentence
from app.ui.patches.textual_internals import prune_closed_watchers
from app.ui.screens.help import HelpRow, HelpScreen
from app.ui.screens.history import HistoryScreen
from app.ui.state.herd_state import Changes
from app.ui.text.format import BAD, BUSY, DIM, OK, is_down
from app.ui.widgets.virtual_table import VirtualTable

if TYPE_CHECKING:
    from app.ui.state.app_protocol import HerdApi

ERROR_DEDUP_SECONDS = 5.0
FIT_REPAINT_EVERY = 0.25  # the fleet view's fit column, at most this often while estimates arrive


class DashboardScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = keys.BINDINGS

    def __init__(self) -> None:
        super().__init__()
        self.selected_machine = ""
        self._recent_errors: dict[str, float] = {}
        self.failure_link = FailureLink()
        self.repeated_failures = RepeatedFailures()
        self._bindings_shown: tuple[bool | None, ...] = ()
        self._title_shown = Text()
        self._notice_shown = Text()
        self.fit = FitAdvisor(lambda: self.app, self._fit_arrived, time.monotonic)
        self._fit_due = False
        self.notices = ActionNotices()
        self._unreachable = UnreachableNotices()
        self.fleet_actions = FleetActions(lambda: self.app, self.notices, self.repeated_failures, self._fleet_refused)

    @property
    def herd(self) -> HerdApi:
        return cast("HerdApi", self.app)

    # ---- layout ----

    def compose(self) -> ComposeResult:
        herd = self.herd
        yield Static(id="title")
        with Horizontal(id="top"):
            yield MachinesPane(list(herd.state.machines.values()), herd.glyphs, herd.now, id="machines")
            with Vertical(id="right"):
                yield FirstRunNotice(id="first-run")
                with ContentSwitcher(initial="models", id="tables"):
                    yield ModelTable(herd.glyphs, id="models")
                    yield FleetTable(herd.glyphs, id="fleet")
        yield LogPanel(herd.glyphs, herd.config.ui.log_lines, id="logs")
        yield Prompt(id="prompt")
        yield QuietFooter(compact=True, show_command_palette=False)

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
    def prompt(self) -> Prompt:
        return self.query_one("#prompt", Prompt)

    @property
    def fleet_view(self) -> bool:
        return self.query_one("#tables", ContentSwitcher).current == "fleet"

    def current_table(self) -> KeyedTable:
        return self.fleet_table if self.fleet_view else self.model_table

    def on_mount(self) -> None:
        herd = self.herd
        self.prompt.display = False
        if herd.frozen_time is not None:
            self.prompt.cursor_blink = False  # a blinking cursor makes every screenshot different
        for name in herd.state.names:
            st = herd.state.get(name)
            st.view = herd.fleet.view(name)
            st.models = herd.fleet.models(name)
            self.machines.update_machine(st)
        if herd.state.names:
            self.select_machine(herd.state.names[0])
        self._paint_title()
        self.query_one("#first-run", FirstRunNotice).display = herd.first_run
        self._paint_hint()
        if herd.first_run:
            first = herd.state.names[0]
            # Workers run on the app: its handler is the one place an unexpected failure is said.
            self.app.run_worker(
                self._ask_for_program(first), name="_ask_for_program", group="program", exit_on_error=False
            )
        self.model_table.focus()
        if herd.frozen_time is None:
            self.set_interval(1.0, self.machines.tick)
        herd.follow_fleet()  # the widgets are there now: events may be painted

    # ---- painting ----

    def paint(self, changes: Changes) -> None:
        """Show what a batch of events changed: only the parts it made stale."""
        try:  # by id, not a query: a query walks the whole DOM, on every flush
            _ = (self.machines, self.model_table)
        except NoMatches:
            return  # the app is closing: its widgets went before this last flush timer
        state = self.herd.state
        with self.app.batch_update():
            for name in changes.cards:
                self.machines.update_machine(state.get(name))
            if self.selected_machine in changes.cards:
                self.logs.set_note(self._log_note(self.selected_machine))
            stale = is_down(state.get(self.selected_machine).view)
            if stale != self.model_table.has_class("-stale"):
                self._show_models()
            elif self.selected_machine in changes.models:
                self._show_models(changes.rows_of(self.selected_machine))
            if changes.models and self.fleet_view:
                self._show_fleet(changes)
            lines = [ln for m, chunk in changes.logs if m == self.selected_machine for ln in chunk]
            if lines:
                self.logs.append(lines)
            self._paint_title()
            if changes.cards:
                self._paint_hint()
        for p in changes.problems:
            if p.model and self.repeated_failures.quiet(p.machine, p.model):
                continue
            self.notify_error(p.message, f"{p.machine}: {p.model}" if p.model else p.machine, p.machine, p.model or "")
        for name in changes.models:
            for done in self.notices.settled(name, state.get(name).models):
                self.app.notify(done, timeout=4, markup=False)
        for machine, hint in self.herd.state.take_hints():
            self.notify(visible(hint), title=visible(machine), timeout=12, markup=False)
        for name in changes.cards:
            if said := self._unreachable.seen(state.get(name).view):
                self.app.notify(said, title="machine unreachable", severity="warning", timeout=10, markup=False)
        self.update_bindings()

    def show_last_changes(self, machines: set[str]) -> None:
        if self.selected_machine in machines:
            self._show_models()

    def _show_models(self, only: frozenset[str] | None = None) -> None:
        """`only`: the ids a delta changed (None: reconcile every row)."""
        st = self.herd.state.get(self.selected_machine)
        last = self.herd.last_changes.of(self.selected_machine)
        if only is None:
            self.model_table.notes = reason_notes(st.models, last, self.herd.now())
        else:  # a delta: only its models' notes can have changed
            notes = dict(self.model_table.notes)
            for k in only:
                m = st.by_id.get(k)
                note = reason_note(m, last.get(k), self.herd.now()) if m is not None else ""
                if note:
                    notes[k] = note
                else:
                    notes.pop(k, None)
            self.model_table.notes = notes
        stale = is_down(st.view)
        self.model_table.show(self.selected_machine, st.models, stale, st.activity, only, st.by_id)

    def _show_fleet(self, changes: Changes | None = None) -> None:
        machines = self.herd.state.machines
        down = frozenset(n for n, st in machines.items() if is_down(st.view))
        self.fit.request_all()  # the fit column: estimates made in workers, shown as they come (_fit_arrived)
        fits = {n: self.fit.fit_words(n) for n in machines}
        activity = {n: st.activity for n, st in machines.items()}
        rows = None if changes is None or changes.whole else changes.rows
        by_id = {n: st.by_id for n, st in machines.items()}
        self.fleet_table.show({n: st.models for n, st in machines.items()}, down, fits, activity, rows, by_id)

    def _paint_title(self) -> None:
        sts = list(self.herd.state.machines.values())
        loaded = sum(st.running_count() for st in sts)
        total = sum(len(st.by_id) for st in sts)
        down = sum(1 for st in sts if is_down(st.view))
        glyphs = self.herd.glyphs
        t = Text.assemble(
            (f" {self.app.title} ", "bold reverse"),
            (f"  {len(sts)} machine{'s' if len(sts) != 1 else ''}", ""),
            (f"  {glyphs.dot}  ", DIM),
            (f"{loaded}/{total} models running", OK if loaded else ""),
        )
        if down:
            t.append(f"  {glyphs.dot}  ", DIM)
            t.append(f"{down} down", BAD)
        if t != self._title_shown:
            self._title_shown = t
            # One full-width line (app.tcss): its size never changes, so no layout pass (one per load or unload).
            self.query_one("#title", Static).update(t, layout=False)

    def _paint_hint(self) -> None:
        """The first run's notice (where the config goes), and how to get llama-server where a start lacked it."""
        herd = self.herd
        missing = [n for n, st in herd.state.machines.items() if st.missing_program]
        how_to = ""
        if missing:
            how_to = HOW_TO_GET if herd.first_run else f"{', '.join(missing)}: {HOW_TO_GET}"
        self.machines.set_hint(Text(how_to, style=BUSY))
        if not herd.first_run:
            return  # the notice stays hidden (FirstRunNotice.display, set on mount)
        here = herd.state.get(herd.state.names[0])
        text = first_run_text(
            config_path=str(herd.config_path) if herd.config_path else "config.toml",
            start_key=keys.first_key("start_router", herd.config.keymap, self._key_display),
            can_start=here.view.router_state not in keys.BUSY,
            missing_program=here.missing_program,
        )
        if text != self._notice_shown:
            self._notice_shown = text
            self.query_one("#first-run", FirstRunNotice).update(text)

    async def _ask_for_program(self, machine: str) -> None:
        """Before any start: does this machine have llama-server? Asked of the fleet, which may look for it."""
        try:
            found = await self.herd.fleet.llama_server_found(machine)
        except HerdError:
            return  # NotOffered included: a start's refusal will say it instead
        self.herd.state.get(machine).missing_program = found is None
        self.machines.update_machine(self.herd.state.get(machine))
        self._paint_hint()

    def notify_error(self, message: str, title: str, machine: str = "", model: str = "") -> None:
        """A failure as a toast, once: a refused command is both raised to us and announced as a Problem event.
        One line, and the key to the log where the machine's log is read here."""
        now = time.monotonic()
        self._recent_errors = {m: t for m, t in self._recent_errors.items() if now - t < ERROR_DEDUP_SECONDS}
        if any(m in message or message in m for m in self._recent_errors):
            return
        self._recent_errors[message] = now
        managed = machine in self.herd.state.machines and self.herd.state.get(machine).view.managed
        log_key = keys.first_key("goto_log", self.herd.config.keymap, self._key_display) if managed else None
        text = one_line_failure(message, log_key)
        if model and self.herd.history is not None:  # a model's failure: `h` opens its history
            self.failure_link.note(machine, model, now)
            text = with_history_key(text, keys.first_key("history", self.herd.config.keymap, self._key_display))
        self.app.notify(text, title=title, severity="error", timeout=10, markup=False)

    # ---- selection ----

    def select_machine(self, name: str) -> None:
        if name not in self.herd.state.machines:
            return
        self.selected_machine = name
        self.machines.selected = name
        self._watch_activity()
        self._show_models()
        self.logs.current_model = self.model_table.selected_model()
        self.logs.set_source(name, self.herd.fleet.log_lines(name), note=self._log_note(name))
        self.update_bindings()

    def _log_note(self, name: str) -> str:
        """What the log panel says while it has no line of `name`."""
        view = self.herd.state.get(name).view
        if view.connection is Connection.UNREACHABLE:
            return f"no log lines: {unreachable_sentence(view)}"
        if view.managed:
            return f"no log lines from {name} yet"
        return f"{name} is attached: somebody else's router, whose log is not read from here"

    @on(MachinesPane.Picked)
    def _picked(self, event: MachinesPane.Picked) -> None:
        self.select_machine(event.machine)

    def action_pick_machine(self, index: int) -> None:
        names = self.herd.state.names
        if 0 <= index < len(names):
            self.select_machine(names[index])

    @on(VirtualTable.RowHighlighted)
    def _row_moved(self, event: VirtualTable.RowHighlighted) -> None:
        target = self.target()
        if target is not None:
            if self.fleet_view and event.table is self.fleet_table and target[0] != self.selected_machine:
                self.select_machine(target[0])  # the log and the machine's highlight follow the fleet's cursor
            self.logs.current_model = target[1]
        self.update_bindings()

    def target(self) -> tuple[str, str | None] | None:
        """(machine, model) the actions apply to: the fleet view's row, or the selected machine and table row."""
        if self.fleet_view:
            sel = self.fleet_table.selected()
            return (sel[0], sel[1]) if sel else None
        if not self.selected_machine:
            return None
        return self.selected_machine, self.model_table.selected_model()

    # ---- which keys apply now ----

    def update_bindings(self) -> None:
        """Refresh the footer only when a key's availability changed: every refresh rebuilds the footer's widgets,
        and doing it on each flush of a 1,000-event burst tripled key latency."""
        now = tuple(self.check_action(a, ()) for a in keys.ENABLED_WHEN)
        if now != self._bindings_shown:
            self._bindings_shown = now
            self.refresh_bindings()
            for footer in self.query(Footer):
                prune_closed_watchers(footer)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Dim footer keys that cannot apply now (a running model cannot be loaded, an attached router not stopped)."""
        enabled_when = keys.ENABLED_WHEN.get(action)
        if enabled_when is None:
            return True
        target = self.target()
        if target is None:
            return None
        machine, model = target
        st = self.herd.state.get(machine)
        # Only the row's model: Target looks it up by scanning, and the footer asks about every action per key.
        mine = (st.by_id[model],) if model is not None and model in st.by_id else ()
        return True if enabled_when(keys.Target(st.view, model, mine, self.herd.fleet.has_files)) else None

    # ---- actions on the target (what they do to the fleet is FleetActions') ----

    def load(self, machine: str, model: str) -> None:
        self.fleet_actions.load(machine, model)

    def unload(self, machine: str, model: str) -> None:
        self.fleet_actions.unload(machine, model)

    def action_load(self) -> None:
        target = self.target()
        if target and target[1]:
            self.fit.load_asking(target[0], target[1], self.load)  # asks first when it will not fit or evicts

    def action_unload(self) -> None:
        target = self.target()
        if target and target[1]:
            self.unload(target[0], target[1])

    def action_reload(self) -> None:
        target = self.target()
        if target:
            self.fleet_actions.reload(target[0])

    def action_start_router(self) -> None:
        target = self.target()
        if target:
            self.fleet_actions.start_router(target[0])

    def action_stop_router(self) -> None:
        target = self.target()
        if target:
            self.fleet_actions.stop_router(target[0])

    def action_edit_preset(self) -> None:
        target = self.target()
        if target and target[1]:
            self.fleet_actions.edit_preset(target[0], target[1])

    def action_edit_global_preset(self) -> None:
        target = self.target()
        if target:
            self.fleet_actions.edit_preset(target[0], "*")

    def action_model_files(self) -> None:
        target = self.target()
        if target:
            self.fleet_actions.model_files(target[0])

    def _fleet_refused(self, machine: str, what: str, error: HerdError) -> None:
        """A Fleet command refused (FleetActions noted it in HerdState): the card, the hint and a toast say so."""
        self.machines.update_machine(self.herd.state.get(machine))
        self._paint_hint()
        self.notify_error(str(error), f"could not {what}", machine)

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

    def action_history(self) -> None:
        query = self.failure_link.query(time.monotonic())  # just after a model's failure: that model's history
        self.app.push_screen(HistoryScreen(self.herd.history, self.herd.now, query))

    def action_help(self) -> None:
        hint = str(self.herd.config_path) if self.herd.config_path else "config.toml"
        self.app.push_screen(HelpScreen(self.binding_rows(), hint))

    def _fit_arrived(self, machine: str) -> None:
        # Estimates arrive one by one (thousands for a big preset): the fit column is repainted once per interval.
        if self.fleet_view and not self._fit_due:
            self._fit_due = True
            self.set_timer(FIT_REPAINT_EVERY, self._fit_repaint)

    def _fit_repaint(self) -> None:
        self._fit_due = False
        if self.fleet_view:
            self._show_fleet(Changes())  # only the rows whose fit word changed

    def action_toggle_fleet(self) -> None:
        """Switch tables, the cursor staying on the same model of the same machine (the selected one follows the
        fleet view's cursor, so going back shows that machine)."""
        switcher = self.query_one("#tables", ContentSwitcher)
        machine, model = self.target() or ("", None)
        if self.fleet_view:
            switcher.current = "models"
            if model is not None:
                self.model_table.show_row(model)
            self.model_table.focus()
        else:
            self._show_fleet()
            switcher.current = "fleet"
            if model is not None:
                self.fleet_table.show_row(fleet_key(machine, model))
            self.fleet_table.focus()
        self._watch_activity()
        self.update_bindings()

    def _watch_activity(self) -> None:
        # Only what is on screen is polled: the selected machine, or every machine in the fleet view.
        self.herd.fleet.watch_activity(None if self.fleet_view else (self.selected_machine,))

    def on_screen_suspend(self) -> None:
        self.herd.hands.set_screen_open(True)  # an editor or a question is over the dashboard: a scenario waits

    def on_screen_resume(self) -> None:
        self.herd.hands.set_screen_open(False)

    # ---- the prompt: filtering a table, searching the log ----

    def action_filter(self) -> None:
        self.prompt.ask("table", "filter models", self.current_table().filter_text)

    def action_log_search(self) -> None:
        """The log panel's `/` (bound there to this screen's action): the prompt, for a log search."""
        self.prompt.ask("log", "search the log", self.logs.search)

    @on(Input.Changed, "#prompt")
    def _prompt_changed(self, event: Input.Changed) -> None:
        self._apply_prompt(event.value)

    @on(Input.Submitted, "#prompt")
    def _prompt_done(self) -> None:
        self._close_prompt()

    @on(Prompt.Cancelled)
    def _prompt_cancelled(self) -> None:
        self._apply_prompt(self.prompt.before)
        self._close_prompt()

    def _apply_prompt(self, value: str) -> None:
        if self.prompt.target == "table":
            self.current_table().set_filter(value)
        elif self.prompt.target == "log":
            self.logs.set_search(value)

    def _close_prompt(self) -> None:
        self.prompt.display = False
        if self.prompt.target == "log":
            self.logs.focus()
        else:
            self.current_table().focus()

    # ---- bindings, for help and the palette ----

    def _key_display(self, key: str) -> str:
        return self.app.get_key_display(Binding(key, ""))

    def _binding_sources(self) -> Iterator[tuple[str, Sequence[BindingType]]]:
        main = [b for b in keys.own_bindings() if not (b.id or "").startswith("machine_")]
        yield "everywhere", main
        yield "tables", KeyedTable.BINDINGS
        yield "log panel", LogPanel.BINDINGS
        yield "machines pane", MachinesPane.BINDINGS
        yield "everywhere", [b for b in keys.BINDINGS if b not in main]

    def binding_rows(self) -> list[HelpRow]:
        return keys.binding_rows(self._binding_sources(), self.herd.config.keymap, self._key_display)

    def palette_actions(self) -> list[tuple[str, str, str]]:
        return keys.palette_actions(self.herd.config.keymap, self._key_display)
