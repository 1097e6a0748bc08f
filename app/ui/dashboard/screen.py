"""The dashboard screen: layout, what is selected and what is painted; what the keys do to the fleet is in
dashboard/actions.py (FleetActions), which the screen's actions hand the selected machine and model.

The app (app.py) owns the data: the fleet, HerdState and the live feed that folds fleet events into it. This
screen shows that state (`paint`, called by the feed at most every 50 ms) and turns keys into Fleet commands,
each awaited in a worker so nothing here waits on a machine.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, ClassVar, cast

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import ContentSwitcher, Footer, Input, Static

from app.config_plugins import PluginConfig
from app.services.core.errors import HerdError
from app.services.core.host_types import Connection
from app.services.core.textsafe import visible
from app.services.hooks.plugin_run import plugin_env, run_background, run_foreground
from app.services.lifecycle.llama_server_binary import HOW_TO_GET
from app.ui.dashboard import detail_action, keys
from app.ui.dashboard.action_feedback import ActionNotices, one_line_failure
from app.ui.dashboard.actions import FleetActions
from app.ui.dashboard.add_machine_action import open_add_machine
from app.ui.dashboard.ask_action import NOT_ANSWERING, open_ask
from app.ui.dashboard.bulk_actions import plan, question
from app.ui.dashboard.command_line import CommandError, Names, complete, parse
from app.ui.dashboard.failure_history import FailureLink, with_history_key
from app.ui.dashboard.first_run_notice import FirstRunNotice, first_run_text
from app.ui.dashboard.fit_verdicts import FitAdvisor
from app.ui.dashboard.fleet_table import SEP, FleetTable, fleet_key
from app.ui.dashboard.footer import QuietFooter
from app.ui.dashboard.hub_action import open_hub, pull
from app.ui.dashboard.log_panel import LogPanel
from app.ui.dashboard.machine_trouble import MODEL_KINDS, trouble_counts
from app.ui.dashboard.machines_pane import MachinesPane
from app.ui.dashboard.model_table import KeyedTable, ModelTable
from app.ui.dashboard.plugins import key_of, outcome_line, output_lines
from app.ui.dashboard.prompt import Prompt
from app.ui.dashboard.reason_cells import reason_note, reason_notes
from app.ui.dashboard.repeat_failures import RepeatedFailures
from app.ui.dashboard.rm_action import ask_remove
from app.ui.dashboard.unreachable_notice import UnreachableNotices, unreachable_sentence
from app.ui.patches.textual_internals import prune_closed_watchers
from app.ui.screens.confirm import ConfirmScreen
from app.ui.screens.help import ALIAS_ROW_ID, HelpRow, HelpScreen
from app.ui.screens.history import HistoryScreen
from app.ui.state.herd_state import Changes
from app.ui.text.format import BAD, BUSY, DIM, OK, is_down
from app.ui.widgets.virtual_table import VirtualTable

if TYPE_CHECKING:
    from app.ui.state.app_protocol import HerdApi

ERROR_DEDUP_SECONDS = 5.0
FIT_REPAINT_EVERY = 0.25  # the fleet view's fit column, at most this often while estimates arrive


BULK_ACTIONS = ("load", "unload", "stop_router")
"""Keys that act on every marked row when rows are marked."""
SIDE_CARD_WIDTH = 33  # a card's width in the side column: #machines (app.tcss) less its border and padding
NARROW_BAND_LINES = 6  # the narrow screen's band of one-line cards: #machines' max-height less its border


class DashboardScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = keys.BINDINGS

    def __init__(self) -> None:
        super().__init__()
        self.selected_machine = ""
        self._log_lines_taken = 0  # the selected machine's LogLines count when its scrollback was taken
        self._machines_form_chosen = False  # `c` pressed: the operator's choice of cards or compact lines holds
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
            if changes.cards and self.machines.problems_first:
                self.machines.resort()
            if self.selected_machine in changes.cards:
                self.logs.set_note(self._log_note(self.selected_machine))
            stale = is_down(state.get(self.selected_machine).view)
            if stale != self.model_table.has_class("-stale"):
                self._show_models()
            elif self.selected_machine in changes.models:
                self._show_models(changes.rows_of(self.selected_machine))
            if changes.models and self.fleet_view:
                self._show_fleet(changes)
            # Lines the panel took with the scrollback when the machine was selected come again in events queued
            # before it (seen under load: a router's warning twice); those are skipped.
            taken = self._log_lines_taken
            lines = [
                ln
                for m, chunk, upto in changes.logs
                if m == self.selected_machine and (upto == 0 or upto > taken)
                for ln in chunk
            ]
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
        for machine, model in self.herd.state.take_not_answering():
            words = f"{model} is loaded but not answering (its child does not answer /metrics)"
            self.notify(visible(words), title=visible(machine), severity="warning", timeout=12, markup=False)
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
        if st.not_answering or any(v.startswith(NOT_ANSWERING) for v in self.model_table.notes.values()):
            notes = {k: v for k, v in self.model_table.notes.items() if not v.startswith(NOT_ANSWERING)}
            for k in st.not_answering:
                notes[k] = NOT_ANSWERING + (f" · {notes[k]}" if k in notes else "")
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
        glyphs = self.herd.glyphs
        t = Text.assemble(
            (f" {self.app.title} ", "bold reverse"),
            (f"  {len(sts)} machine{'s' if len(sts) != 1 else ''}", ""),
            (f"  {glyphs.dot}  ", DIM),
            (f"{loaded}/{total} models running", OK if loaded else ""),
        )
        for kind, n in trouble_counts(sts):  # each kind of trouble counted, worst first (machine_trouble.py)
            t.append(f"  {glyphs.dot}  ", DIM)
            t.append(f"{n} {kind}" + (" model" + ("s" if n != 1 else "") if kind in MODEL_KINDS else ""), BAD)
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
        self._log_lines_taken = self.herd.fleet.log_lines_added(name)
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
            detail_action.follow(self, *target)
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
        and doing it on each flush of a 1,000-event burst tripled key latency. The target is looked up once for
        all the keys (each flush asks this, twice a second while a download moves)."""
        target = self._key_target()
        now = tuple(self._applies(a, target) for a in keys.ENABLED_WHEN)
        if now != self._bindings_shown:
            self._bindings_shown = now
            self.refresh_bindings()
            for footer in self.query(Footer):
                prune_closed_watchers(footer)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Dim footer keys that cannot apply now (a running model cannot be loaded, an attached router not stopped)."""
        if action not in keys.ENABLED_WHEN:
            return True
        return self._applies(action, self._key_target())

    def _key_target(self) -> keys.Target | None:
        target = self.target()
        if target is None:
            return None
        machine, model = target
        st = self.herd.state.get(machine)
        # Only the row's model: Target looks it up by scanning, and the footer asks about every action per key.
        mine = (st.by_id[model],) if model is not None and model in st.by_id else ()
        return keys.Target(st.view, model, mine, self.herd.fleet.has_files)

    def _applies(self, action: str, target: keys.Target | None) -> bool | None:
        enabled_when = keys.ENABLED_WHEN.get(action)
        if enabled_when is None:
            return True
        if action in BULK_ACTIONS and self._has_marks():
            return True  # the marked rows are the target: the question says which of them it applies to
        if target is None:
            return None
        return True if enabled_when(target) else None

    # ---- actions on the target (what they do to the fleet is FleetActions') ----

    def load(self, machine: str, model: str) -> None:
        self.fleet_actions.load(machine, model)

    def unload(self, machine: str, model: str) -> None:
        self.fleet_actions.unload(machine, model)

    # ---- marked rows: one question, then each (bulk_actions.py) ----

    def _has_marks(self) -> bool:
        try:
            return bool(self.current_table().marked)
        except NoMatches:
            return False

    def _marked(self) -> list[tuple[str, str]]:
        table = self.current_table()
        if not table.marked:
            return []
        keys_in_order = [k for k in table.order if k in table.marked]
        if self.fleet_view:
            return [(k.split(SEP, 1)[0], k.split(SEP, 1)[1]) for k in keys_in_order if SEP in k]
        return [(self.selected_machine, k) for k in keys_in_order]

    def _bulk(self, verb: str) -> bool:
        """Act on the marked rows, if any (True: they were the target, whatever the answer)."""
        marked = self._marked()
        if not marked:
            return False
        p = plan(verb, marked, self.herd.state)
        if not p.todo:
            self.app.notify(f"nothing to {verb}: none of the {len(marked)} marked rows applies", markup=False)
            return True
        body = question(p, self.herd.state, lambda m, mid: self.fit.preview(m, mid).line)
        table = self.current_table()

        def answered(yes: bool | None) -> None:
            if not yes:
                return
            for machine, model in p.todo:
                if verb == "load":
                    self.load(machine, model)
                elif verb == "unload":
                    self.unload(machine, model)
                else:
                    self.fleet_actions.stop_router_now(machine)
            table.clear_marks()
            table.refresh_rows()

        what = "routers" if verb == "stop" else "models"
        self.app.push_screen(ConfirmScreen(f"{verb} {len(p.todo)} {what}", body, yes=verb.title()), answered)
        return True

    def action_load(self) -> None:
        if self._bulk("load"):
            return
        target = self.target()
        if target and target[1]:
            self.fit.load_asking(target[0], target[1], self.load)  # asks first when it will not fit or evicts

    def action_unload(self) -> None:
        if self._bulk("unload"):
            return
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
        if self._bulk("stop"):
            return
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

    def action_hub(self) -> None:
        target = self.target()
        if target:
            open_hub(self.app, self.herd, target[0])

    def action_remove_model(self) -> None:
        target = self.target()
        if target and target[1]:
            ask_remove(self.app, self.herd, target[0], target[1])

    def action_ask(self) -> None:
        target = self.target()
        if target and target[1]:
            open_ask(self.app, self.herd, self.fit, target[0], target[1])  # asks first when it must load

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

    def action_model_detail(self, toggle: bool = True) -> None:
        target = self.target()
        if target and target[1]:
            lines = detail_action.fit_lines(self.fit, self.herd.state)
            detail_action.open_detail(self, target[0], target[1], lines, toggle=toggle)

    @on(VirtualTable.RowSelected)
    def _row_chosen(self) -> None:
        self.action_model_detail(toggle=False)  # Enter, or a click on the cursor's row: the detail, kept open

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

    # ---- the machines pane's form ----

    def on_resize(self) -> None:
        self.call_after_refresh(self._fit_machines)
        detail_action.fit_room(self)

    def _fit_machines(self) -> None:
        """Compact when the cards would not all fit where they go (a side column, or the band of a narrow screen),
        unless the operator chose with `c`; decided again on each resize, never while the size holds."""
        if self._machines_form_chosen:
            return
        pane = self.machines
        top = self.query_one("#top")
        if self.has_class("-narrow"):  # one dense line each, in a band of NARROW_BAND_LINES (app.tcss)
            room, width = NARROW_BAND_LINES, top.size.width - 3
        else:
            room, width = top.size.height - 2, SIDE_CARD_WIDTH
        compact = pane.cards_height(width) > room
        if compact != pane.compact:
            pane.compact = compact
            self.set_class(compact, "-compact")

    # ---- [[plugins]] (plugins.py) ----

    def on_key(self, event: events.Key) -> None:
        """A key no binding took: a plugin's, when the config gives it one."""
        plugins = self.herd.config.plugins
        i = key_of(event.key, plugins) if plugins else None
        if i is not None:
            event.stop()
            self.run_plugin(plugins[i])

    def run_plugin(self, plugin: PluginConfig) -> None:
        target = self.target()
        if not target:
            return
        machine, model = target
        if plugin.scope == "model" and not model:
            self.app.notify(visible(f"{plugin.description}: select a model first"), timeout=4, markup=False)
            return
        what = f"{model} on {machine}" if plugin.scope == "model" else machine

        async def run() -> None:
            extra: dict[str, str] = {}
            with contextlib.suppress(HerdError, OSError):  # a router that cannot say its URL: the rest still goes
                extra = await self.herd.fleet.router_env(machine)
            env = plugin_env(machine, model if plugin.scope == "model" else None, extra)
            if plugin.background:
                done = await run_background(plugin, env)
                if machine == self.selected_machine:
                    self.logs.append(output_lines(done))
            else:
                with self.app.suspend():
                    done = run_foreground(plugin, env)
            ok = done.exit_code == 0
            line, title = outcome_line(plugin, done), visible(what)
            if ok:
                self.app.notify(line, title=title, markup=False, severity="information", timeout=6)
            else:
                self.app.notify(line, title=title, markup=False, severity="error", timeout=12)

        def go(yes: bool | None = True) -> None:
            if yes:
                self.app.run_worker(run(), group="plugins", exit_on_error=False)

        if plugin.confirm:
            self.app.push_screen(ConfirmScreen(f"{plugin.description}?", visible(f"Run it for {what}?")), go)
        else:
            go()

    def action_add_machine(self) -> None:
        open_add_machine(self.app, self.herd, self.machines, self.select_machine)

    def action_retry_machine(self) -> None:
        target = self.target()
        if target:
            self.herd.fleet.retry_now(target[0])
            self.app.notify(f"retrying {visible(target[0])} now", timeout=3, markup=False)

    def action_toggle_compact(self) -> None:
        self._machines_form_chosen = True
        self.machines.compact = not self.machines.compact
        self.set_class(self.machines.compact, "-compact")

    def action_problems_first(self) -> None:
        self.machines.problems_first = not self.machines.problems_first

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
        """The log panel's `/` (bound there to this screen's action): the prompt, for a find (n/N go on)."""
        self.prompt.ask("log", "find in the log (n / N: next, previous)", self.logs.find)

    def action_log_filter(self) -> None:
        """The log panel's `&`: the prompt, for a filter (only the lines holding the words are shown)."""
        self.prompt.ask("logfilter", "filter the log: only lines holding", self.logs.search)

    @on(Input.Changed, "#prompt")
    def _prompt_changed(self, event: Input.Changed) -> None:
        self._apply_prompt(event.value)

    @on(Input.Submitted, "#prompt")
    def _prompt_done(self) -> None:
        command = self.prompt.value if self.prompt.target == "command" else None
        self._close_prompt()
        if command is not None and command.strip():
            self.run_command(command)

    # ---- `:` commands (command_line.py) ----

    def action_command(self) -> None:
        label = "command: load MODEL on MACHINE..., stop MACHINE, machine NAME, fleet, history  (Tab completes)"
        self.prompt.ask("command", label, "", completer=lambda text: complete(text, self._names()))

    def _names(self) -> Names:
        st = self.herd.state
        models = {n: [*ms.by_id, *(a for m in ms.by_id.values() for a in m.aliases)] for n, ms in st.machines.items()}
        return Names(machines=st.names, models=models, selected=self.selected_machine, aliases=self.herd.config.aliases)

    def run_command(self, text: str) -> None:
        """Run a `:` command as its keys would (the same questions asked first); a mistake is one line said."""
        try:
            cmd = parse(text, self._names())
        except CommandError as e:
            self.app.notify(visible(str(e)), title="command", severity="warning", timeout=6, markup=False)
            return
        one = cmd.machines[0] if cmd.machines else self.selected_machine
        if cmd.verb == "load" and cmd.name:
            for m in cmd.machines:
                self.fit.load_asking(m, cmd.name, self.load)
        elif cmd.verb == "unload" and cmd.name:
            for m in cmd.machines:
                self.unload(m, cmd.name)
        elif cmd.verb == "ask" and cmd.name:
            open_ask(self.app, self.herd, self.fit, one, cmd.name)
        elif cmd.verb == "pull" and cmd.name:
            for m in cmd.machines:
                pull(self.app, self.herd, m, cmd.name)
        elif cmd.verb in ("start", "stop", "retry"):
            for m in cmd.machines:
                if cmd.verb == "retry":
                    self.herd.fleet.retry_now(m)
                else:
                    (self.fleet_actions.start_router if cmd.verb == "start" else self.fleet_actions.stop_router)(m)
        elif cmd.verb == "machine":
            if self.fleet_view:
                self.action_toggle_fleet()
            self.select_machine(one)
        elif cmd.verb == "fleet":
            self.action_toggle_fleet()
        elif cmd.verb == "history":
            self.action_history()
        elif cmd.verb == "compact":
            self.action_toggle_compact()
        elif cmd.verb == "help":
            self.action_help()

    @on(Prompt.Cancelled)
    def _prompt_cancelled(self) -> None:
        self._apply_prompt(self.prompt.before)
        self._close_prompt()

    def _apply_prompt(self, value: str) -> None:
        if self.prompt.target == "table":
            self.current_table().set_filter(value)
        elif self.prompt.target == "log":
            self.logs.set_find(value)
        elif self.prompt.target == "logfilter":
            self.logs.set_search(value)

    def _close_prompt(self) -> None:
        self.prompt.completer = None
        self.prompt.display = False
        if self.prompt.target in ("log", "logfilter"):
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
        rows = keys.binding_rows(self._binding_sources(), self.herd.config.keymap, self._key_display)
        for p in self.herd.config.plugins:  # the config's own keys: no id to rebind, their key is in [[plugins]]
            rows.append(HelpRow("plugins", self._key_display(p.key.split(",")[0].strip()), "plugin", p.description))
        for name, command in self.herd.config.aliases.items():  # [aliases]: `:NAME` runs the command
            rows.append(HelpRow("command line", f":{name}", ALIAS_ROW_ID, command))
        return rows

    def palette_actions(self) -> list[tuple[str, str, str]]:
        found = keys.palette_actions(self.herd.config.keymap, self._key_display)
        for i, p in enumerate(self.herd.config.plugins):
            found.append((f"Plugin: {p.description}", f"run_plugin_at({i})", f"key {p.key.split(',')[0].strip()}"))
        return found

    def action_run_plugin_at(self, index: int) -> None:
        plugins = self.herd.config.plugins
        if 0 <= index < len(plugins):
            self.run_plugin(plugins[index])
