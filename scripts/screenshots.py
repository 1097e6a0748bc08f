"""`python -m scripts.screenshots DIR` (`make screenshots`): the README's screenshots, as SVGs the app writes of itself.

They are taken from the real demo fleet: `app.demo.prepare` writes the tiny models and presets under a fixed
directory (ROOT, removed and made again on every run so every path on screen is the same), `start_routers` starts
three real llama-server routers (on fixed ports when those are free), and the dashboard runs headless at 120x40 on
them through the real Fleet. Every key pressed is an operator's key; every model state shown is one a router
reported. The routers this run started are stopped at the end, whatever happens, and ROOT is removed.

Running it twice gives byte-identical files. What would differ between runs is kept off the screen, and this is
the whole list of what is not live:

- Host stats (CPU, memory, GPU memory and the CPU sparkline) are fixed, plausible figures per machine (STATS,
  cpu_history), not measurements: live ones differ on every run. The two "GPU boxes" are stand-ins on this
  machine; the GPU figures shown for them are illustrative.
- Router uptimes are fixed (UPTIMES) against a frozen clock (`frozen_time`): the routers really started seconds
  before each screenshot.
- The log panel is filtered to warnings and errors (`w`, the same filter an operator has): those lines carry no
  child ports, pids or timestamps, which the info lines do.
- loading.svg: a tiny model is "loading" for milliseconds, so to catch the real loading row the run pauses the
  feed of fleet events right after the router reports the model loading with progress (log lines from the moment
  the load is asked), takes the screenshot, then passes on everything it kept back (ShotFleet.hold_after,
  ShotFleet.release).
- Notifications carry the router's own words, which are the same on every run (the model's error lines, without
  timestamps).
- hub.svg and pulling.svg: workstation's hub is a stand-in on loopback (tests/helpers/hub_standin.py, started here,
  serving the tiny repo at HUB_RATE so the download lasts a few seconds), shown under the fixed address HUB_SHOWN
  (its port differs between runs). Its fit verdicts are judged against workstation's fixed STATS, not this
  machine's memory. The downloading row is caught as loading.svg is (the feed held at the first progress event),
  with fixed figures (PULL_SHOWN: the bytes done, rate and time left differ on every run).
- ask.svg: the question is typed with an operator's keys into the real ask pane, but the reply and its figures are
  fixed (ASK_REPLY, ASK_FIGURES): the demo's tiny models answer random tokens, at a speed that differs every run.

Router records and logs go to ROOT/state (XDG_STATE_HOME is set for this process), so a demo an operator keeps
running is neither adopted nor disturbed. `--root DIR` puts the demo elsewhere (the tests do, so they never touch
a run in progress); the files then show that directory's paths. A root is only ever removed when empty or when it
holds the MARKER file a run left there.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import math
import os
import shutil
import socket
import sys
import time
from collections.abc import AsyncGenerator, Callable, Collection, Sequence
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.widgets import Input, Static

from app import demo
from app.config import Config
from app.services.activity.poll import ActivityChanged
from app.services.ask.answer import Answer, Piece
from app.services.ask.conversation import Conversation
from app.services.ask.figures import AnswerFigures
from app.services.core.download_meter import PullProgress
from app.services.core.fleet_events import (
    FleetEvent,
    HostStatsChanged,
    LogLines,
    MachineChanged,
    MachineView,
    ModelsChanged,
    ModelsUpdated,
)
from app.services.core.host_types import GpuStats, HostStats
from app.services.core.log_lines import LogLine
from app.services.core.router_types import ModelInfo, ModelState
from app.services.files.discovery import DiscoveredModel, Discovery
from app.services.fit.estimate import FitEstimate
from app.services.fleet import Fleet
from app.services.hosts.child_memory import ModelMemory
from app.services.hub.hub_api import RepoHit
from app.services.hub.pull import PullOutcome
from app.services.hub.search import RepoChoices, repo_choices
from app.services.presets.store import Edit, PresetPlan, PresetResult, PresetSnapshot
from app.ui.app import HerdApp, make_app
from app.ui.dashboard.fleet_table import SEP as FLEET_SEP
from app.ui.screens.ask import AskScreen
from app.ui.screens.confirm import ConfirmScreen
from app.ui.screens.help import HelpScreen
from app.ui.screens.hub import HubScreen
from app.ui.screens.preset_form import PresetForm
from app.ui.text.format import human_bytes
from tests.helpers.hub_standin import TINY_REPO, HubStandin, write_tiny_hub

ROOT = Path("/tmp/llamaherd-screenshots")
PORTS = (39101, 39102, 39103)
SIZE = (120, 40)
FROZEN = 1_760_000_000.0
FILES = ("overview.svg", "compact.svg", "command.svg", "fleet.svg", "loading.svg", "failed.svg", "preset-diff.svg",
         "help.svg", "ask.svg", "hub.svg", "pulling.svg")  # fmt: skip
HUB_MACHINE = "workstation"
HUB_SHOWN = "https://hub.example.internal"
HUB_RATE = 100_000.0  # bytes a second: the tiny repo's file takes ~4 s
PULLED = f"{TINY_REPO}:Q4_K_M"
PULL_SHOWN = (0.41, 96_000.0)  # the fraction done and the rate (bytes a second) the downloading row shows
MODEL_RSS = 21 * 1024 * 1024  # what the fleet view's memory column shows for every running model
TIMEOUT = 90.0  # a bound on a wait that never came, not a target: the suite runs on several workers

GIB = 1024**3
ASK_QUESTION = "In one line: what is a router preset?"
ASK_REPLY = (
    "A preset is a section of models.ini naming a model's file and its load options;\n"
    "the router starts one child per loaded preset and routes each request to it by model name."
)
KEY_OF = {" ": "space", ":": "colon", "?": "question_mark"}
ASK_FIGURES = AnswerFigures(ttft_ms=38.0, tokens_per_s=41.6, prompt_tokens=24, completion_tokens=37, from_server=True)
STATS: dict[str, HostStats] = {
    "workstation": HostStats(cpu_pct=18.0, mem_used=int(9.4 * GIB), mem_total=32 * GIB, load_avg=(0.9, 0.8, 0.7)),
    "gpu-box-a": HostStats(
        cpu_pct=41.0,
        mem_used=int(38.5 * GIB),
        mem_total=128 * GIB,
        load_avg=(2.1, 1.9, 1.6),
        gpus=(GpuStats("NVIDIA RTX 4090", 17_820.0, 24_564.0, 63.0),),
    ),
    "gpu-box-b": HostStats(
        cpu_pct=7.0,
        mem_used=int(21.0 * GIB),
        mem_total=64 * GIB,
        load_avg=(0.4, 0.5, 0.5),
        gpus=(GpuStats("NVIDIA L4", 6_120.0, 23_034.0, 12.0), GpuStats("NVIDIA L4", 2_240.0, 23_034.0, 3.0)),
    ),
}
UPTIMES: dict[str, float] = {"workstation": 2 * 3600 + 14 * 60 + 5, "gpu-box-a": 3 * 86400 + 5 * 3600 + 40 * 60,
                             "gpu-box-b": 47 * 60 + 12}  # fmt: skip
HISTORY_SAMPLES = 30


def cpu_history(machine: str) -> list[float]:
    """A fixed minute of CPU samples ending at the machine's STATS figure."""
    last = STATS[machine].cpu_pct
    phase = {"workstation": 0.0, "gpu-box-a": 1.3, "gpu-box-b": 2.6}.get(machine, 0.0)
    out = [max(1.0, last * (0.6 + 0.4 * math.sin(phase + i / 2.5)) + 4 * math.sin(i * 1.7)) for i in range(29)]
    return [round(v, 1) for v in out] + [last]


class ShotFleet:
    """The real Fleet as the dashboard sees it, with what would differ between runs kept off the screen.

    Model lists, router states, log lines and problems are the real fleet's, passed on as they come. Host stats are
    replaced by the fixed figures above, router start times by fixed uptimes. The feed can be paused for the
    screenshot of a moment: `hold_logs` keeps log lines back, `hold_after` names the last event passed on before
    everything is kept back; `release()` passes on what was kept, in order, and the feed flows again.
    """

    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet
        self.hold_logs = False
        self.hold_after: Callable[[FleetEvent], bool] | None = None
        self.held = False
        self._kept: list[FleetEvent] = []
        self._outs: list[asyncio.Queue[FleetEvent]] = []
        self._pumps: list[asyncio.Task[None]] = []

    @property
    def names(self) -> list[str]:
        return self.fleet.names

    async def start(self) -> None:
        await self.fleet.start()

    async def close(self) -> None:
        for t in self._pumps:
            t.cancel()
        self._pumps = []
        await self.fleet.close()

    def subscribe(self) -> asyncio.Queue[FleetEvent]:
        inner = self.fleet.subscribe()
        out: asyncio.Queue[FleetEvent] = asyncio.Queue()
        for name in self.names:
            stats = STATS.get(name)
            if stats is not None:
                for pct in cpu_history(name):
                    out.put_nowait(HostStatsChanged(name, dataclasses.replace(stats, cpu_pct=pct)))
        self._outs.append(out)
        self._pumps.append(asyncio.create_task(self._pump(inner), name="screenshot-events"))
        return out

    def unsubscribe(self, q: asyncio.Queue[FleetEvent]) -> None:
        with contextlib.suppress(ValueError):
            self._outs.remove(q)

    async def _pump(self, inner: asyncio.Queue[FleetEvent]) -> None:
        try:
            while True:
                self._pass(await inner.get())
        finally:
            self.fleet.unsubscribe(inner)

    def _pass(self, ev: FleetEvent) -> None:
        if isinstance(ev, HostStatsChanged):
            return  # the fixed figures stand instead
        if isinstance(ev, ActivityChanged):
            return  # tokens/s and its sparkline differ from run to run
        if isinstance(ev, MachineChanged):
            ev = MachineChanged(ev.machine, self._view(ev.view))
        if isinstance(ev, ModelsChanged | ModelsUpdated) and any(m.download for m in ev.models):
            ev = dataclasses.replace(ev, models=tuple(_shown_download(m) for m in ev.models))
        if self.held or (self.hold_logs and isinstance(ev, LogLines)):
            self._kept.append(ev)
            return
        if self.hold_after is not None and self.hold_after(ev):
            self.held = True  # this event is the last one shown until release()
        self._send(ev)

    def _send(self, ev: FleetEvent) -> None:
        for out in self._outs:
            out.put_nowait(ev)

    def release(self) -> None:
        self.held, self.hold_logs, self.hold_after = False, False, None
        kept, self._kept = self._kept, []
        for ev in kept:
            self._send(ev)

    async def hub_search(self, machine: str, query: str) -> list[RepoHit]:
        return await self.fleet.hub_search(machine, query)

    async def hub_repo(self, machine: str, repo: str) -> RepoChoices:
        # judged against the machine's fixed figures, not this machine's memory
        return await repo_choices(self.fleet.machine(machine), repo, host=STATS.get(machine))

    async def pull(
        self, machine: str, spec: str, on_progress: Callable[[PullProgress], None] | None = None
    ) -> PullOutcome:
        return await self.fleet.pull(machine, spec, on_progress)

    async def ask(
        self, machine: str, conv: Conversation, vision: bool | None, max_tokens: int, load_first: bool = False
    ) -> AsyncGenerator[Piece | Answer, None]:
        """The fixed reply, a word at a time (see the module's list of what is not live)."""
        for word in ASK_REPLY.split(" "):
            yield Piece(word + " ", time.monotonic())
            await asyncio.sleep(0)
        yield Answer(ASK_REPLY, ASK_FIGURES, "stop")

    def _view(self, v: MachineView) -> MachineView:
        if v.started_at is None:
            return v
        return dataclasses.replace(v, started_at=FROZEN - UPTIMES.get(v.name, 60.0))

    def view(self, machine: str) -> MachineView:
        return self._view(self.fleet.view(machine))

    def models(self, machine: str) -> tuple[ModelInfo, ...]:
        return self.fleet.models(machine)

    def log_lines(self, machine: str) -> Sequence[LogLine]:
        return self.fleet.log_lines(machine)

    def log_lines_added(self, machine: str) -> int:
        return self.fleet.log_lines_added(machine)

    async def load(self, machine: str, model: str) -> None:
        await self.fleet.load(machine, model)

    async def unload(self, machine: str, model: str) -> None:
        await self.fleet.unload(machine, model)

    async def reload(self, machine: str) -> None:
        await self.fleet.reload(machine)

    async def start_router(self, machine: str) -> object:
        return await self.fleet.start_router(machine)

    async def stop_router(self, machine: str) -> None:
        await self.fleet.stop_router(machine)

    async def router_env(self, machine: str) -> dict[str, str]:
        return await self.fleet.router_env(machine)

    def retry_now(self, machine: str) -> None:
        self.fleet.retry_now(machine)

    async def llama_server_found(self, machine: str) -> str | None:
        return await self.fleet.llama_server_found(machine)

    def watch_activity(self, machines: Collection[str] | None) -> None:
        self.fleet.watch_activity(machines)

    # files: the preset editor's and the model files screen's part of the fleet

    @property
    def config(self) -> Config:
        return self.fleet.config

    @property
    def has_files(self) -> bool:
        return self.fleet.has_files

    @property
    def has_fit(self) -> bool:
        return self.fleet.has_fit

    async def fit_estimate(self, machine: str, model: ModelInfo, has_gpu: bool) -> FitEstimate:
        return await self.fleet.fit_estimate(machine, model, has_gpu)

    async def model_memory(self, machine: str) -> dict[str, ModelMemory]:
        # The models really running, with fixed figures: a child's RSS differs from run to run (as host stats do).
        real = await self.fleet.model_memory(machine)
        return {m: ModelMemory(rss=MODEL_RSS, pid=1) for m, mem in real.items() if mem.rss is not None}

    async def file_estimate(self, machine: str, model: DiscoveredModel, has_gpu: bool) -> FitEstimate:
        return await self.fleet.file_estimate(machine, model, has_gpu)

    async def read_preset(self, machine: str) -> PresetSnapshot:
        return await self.fleet.read_preset(machine)

    async def preset_known_keys(self, machine: str) -> frozenset[str]:
        return await self.fleet.preset_known_keys(machine)

    async def plan_preset(self, machine: str, edit: Edit, snapshot: PresetSnapshot | None = None) -> PresetPlan:
        return await self.fleet.plan_preset(machine, edit, snapshot)

    async def apply_preset(self, machine: str, plan: PresetPlan) -> PresetResult:
        return await self.fleet.apply_preset(machine, plan)

    async def discover_models(self, machine: str) -> Discovery:
        return await self.fleet.discover_models(machine)

    async def new_section(self, machine: str, model: DiscoveredModel) -> dict[str, str]:
        return await self.fleet.new_section(machine, model)


def _shown_download(m: ModelInfo) -> ModelInfo:
    """A downloading model's progress at the fixed figures of PULL_SHOWN (its real total)."""
    if m.download is None or not m.download.total:
        return m
    fraction, rate = PULL_SHOWN
    done = int(m.download.total * fraction)
    shown = PullProgress(m.download.name, done, m.download.total, rate, (m.download.total - done) / rate)
    return dataclasses.replace(m, download=shown)


# ---- the run ----


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def with_ports(config: Config, fixed: bool) -> Config:
    """PORTS when asked and all free, else 0 (the router manager picks free ones): ports are not on screen anyway.

    Only the default root asks: runs elsewhere (tests) may run beside it, and must not race it for the same ports.
    """
    ports = PORTS if fixed and all(_port_free(p) for p in PORTS) else (0,) * len(PORTS)
    machines = tuple(dataclasses.replace(m, router_port=p) for m, p in zip(config.machines, ports, strict=False))
    return dataclasses.replace(config, machines=machines)


async def wait_for_startup_models(config: Config) -> None:
    """Each router's load-on-startup model loaded before the dashboard looks, so every run starts from one state."""
    fleet = Fleet(config)
    try:
        await asyncio.gather(
            *(fleet.load_and_wait(dm.name, dm.on_startup, timeout=TIMEOUT) for dm in demo.MACHINES if dm.on_startup)
        )
    finally:
        await fleet.close()


async def until(
    pilot: Pilot[Any],
    what: str,
    cond: Callable[[], object],
    timeout: float = TIMEOUT,
    explain: Callable[[], str] | None = None,
) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            seen = f" (last seen: {explain()})" if explain else ""
            raise TimeoutError(f"screenshots: gave up waiting for {what}{seen}")
        await pilot.pause(0.02)


def status(app: HerdApp, model: str) -> str:
    row = app.dashboard.model_table.rows_now.get(model)
    return row[1].text if row else ""


def we_lines(app: HerdApp) -> list[LogLine]:
    return [ln for ln in app.dashboard.logs.buffer if app.dashboard.logs.wanted(ln)]


class Director:
    """The keys, in order, and a screenshot at each state the README shows."""

    def __init__(self, app: HerdApp, pilot: Pilot[Any], fleet: ShotFleet, out: Path) -> None:
        self.app = app
        self.pilot = pilot
        self.fleet = fleet
        self.out = out

    async def shoot(self, name: str) -> None:
        await self.pilot.pause(0.3)  # the last paint (at most every 50 ms) and any layout it caused
        await self.pilot.wait_for_scheduled_animations()
        (self.out / name).write_text(self.app.export_screenshot(), encoding="utf-8")

    async def select(self, machine_key: str, model: str) -> None:
        app = self.app
        await self.pilot.press(machine_key)
        await until(self.pilot, f"{model} in the table", lambda: model in app.dashboard.model_table.rows_now)
        app.dashboard.model_table.move_cursor(row=app.dashboard.model_table.get_row_index(model))
        await self.pilot.pause()

    async def run(self) -> None:
        app, pilot = self.app, self.pilot
        # The panel shows warnings and errors: no ports, pids or timestamps in those lines.
        app.dashboard.logs.level = "WE"
        app.dashboard.logs.rewrite()
        startup = {dm.name: dm.on_startup for dm in demo.MACHINES if dm.on_startup}
        counts = {dm.name: len(dm.models) for dm in demo.MACHINES}

        def ready() -> bool:
            for name, model in startup.items():
                st = app.state.get(name)
                if len(st.models) != counts[name] or st.stats is None or st.view.stream != "sse":
                    return False
                if not any(m.id == model and m.state is ModelState.LOADED and m.n_ctx for m in st.models):
                    return False
            # workstation's warnings: the router's one ("router mode enabled"; the no-API-key warnings of the router
            # and its model went when every router got a key)
            return status(app, "chat-small").endswith(" loaded") and len(we_lines(app)) == 1

        def seen() -> str:
            parts = []
            for name in startup:
                st = app.state.get(name)
                states = ",".join(f"{m.id}={m.state.value}" for m in st.models)
                parts.append(f"{name}: {len(st.models)}/{counts[name]} models, stream {st.view.stream}, {states}")
            parts.append(f"chat-small {status(app, 'chat-small')!r}")
            parts.append("warnings: " + " | ".join(ln.text[:120] for ln in we_lines(app)))
            return "; ".join(parts)

        await until(pilot, "the demo fleet, loaded and listed", ready, explain=seen)
        await self.shoot("overview.svg")

        # The compact machines pane (`c`; chosen by itself when the cards do not fit), and back to cards.
        await pilot.press("c")
        await until(pilot, "the compact pane", lambda: app.dashboard.machines.compact)
        await self.shoot("compact.svg")
        await pilot.press("c")
        await until(pilot, "the cards again", lambda: not app.dashboard.machines.compact)

        # A `:` command being typed, its next word offered (Tab takes it).
        await pilot.press("colon", *"load chat-m")
        await until(pilot, "the completion", lambda: app.dashboard.prompt.value == "load chat-m")
        await self.shoot("command.svg")
        await pilot.press("escape")
        await until(pilot, "the prompt closed", lambda: not app.dashboard.prompt.display)

        await pilot.press("f")
        await until(pilot, "the fleet view", lambda: len(app.dashboard.fleet_table.rows_now) == sum(counts.values()))
        await until(pilot, "the fit verdicts", lambda: not app.dashboard.fit.pending())  # made in workers
        shown = human_bytes(MODEL_RSS)

        def memory_shown() -> bool:
            running = [f"{n}{FLEET_SEP}{m}" for n, m in startup.items()]
            rows = app.dashboard.fleet_table.rows_now
            return all(any(c.text == shown for c in rows.get(k, ())) for k in running)

        await until(pilot, "the memory column", memory_shown)  # read in a worker every few seconds
        await self.shoot("fleet.svg")
        await pilot.press("f")

        await pilot.press("question_mark")
        await until(pilot, "the help screen", lambda: isinstance(app.screen, HelpScreen))
        await self.shoot("help.svg")
        await pilot.press("escape")
        await until(pilot, "help closed", lambda: not isinstance(app.screen, HelpScreen))

        # The ask pane on workstation's loaded chat-small: a question typed, its (fixed) reply and figures.
        await self.select("1", "chat-small")
        await pilot.press("a")
        await until(pilot, "the ask pane", lambda: isinstance(app.screen, AskScreen))
        await pilot.press(*[KEY_OF.get(ch, ch) for ch in ASK_QUESTION], "enter")
        asked = app.screen

        def answered() -> bool:
            return isinstance(asked, AskScreen) and len(asked.conv.turns) == 2 and not asked.answering

        await until(pilot, "the answer", answered)
        # The input's cursor blinks twice a second, and the answer ends at no fixed time: shown steadily for the shot.
        asked.query_one(Input).cursor_blink = False
        await self.shoot("ask.svg")
        await pilot.press("escape")
        await until(pilot, "the ask pane closed", lambda: not isinstance(app.screen, AskScreen))

        # The preset editor on gpu-box-a's chat-medium: one field changed, and the diff before writing.
        await self.select("2", "chat-medium")
        await until(pilot, "gpu-box-a's log", lambda: len(we_lines(app)) == 1)
        await pilot.press("e")
        await until(pilot, "the preset form", lambda: isinstance(app.screen, PresetForm) and app.screen.mode == "form")
        form = app.screen
        assert isinstance(form, PresetForm)
        ctx = form.query_one("#field-ctx-size", Input)
        ctx.focus()
        ctx.value = "2048"
        await pilot.press("ctrl+s")
        await until(pilot, "the diff", lambda: form.mode == "review")
        await self.shoot("preset-diff.svg")
        await pilot.press("escape")  # back to the form
        await until(pilot, "the form again", lambda: form.mode == "form")
        await pilot.press("escape")  # cancelled: it asks first (an edit is unsaved), then nothing is written
        await until(pilot, "discard changes?", lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await until(pilot, "the editor closed", lambda: app.screen is app.dashboard)
        app.dashboard.model_table.focus()

        # A real load of chat-medium on gpu-box-b, shown at the first event that reports it loading with progress.
        # Taken before failed.svg: a column is as wide as the widest text it has shown, and the loading badge is
        # the widest status; after it, every later table has the same widths whatever the timing of other loads.
        await self.select("3", "chat-medium")
        await until(pilot, "gpu-box-b's log", lambda: len(we_lines(app)) == 1)

        def loading(ev: FleetEvent) -> bool:
            return (
                isinstance(ev, ModelsChanged | ModelsUpdated)  # a status event is a delta
                and ev.machine == "gpu-box-b"
                and any(m.id == "chat-medium" and m.state is ModelState.LOADING and m.progress for m in ev.models)
            )

        self.fleet.hold_logs = True
        self.fleet.hold_after = loading
        await pilot.press("l")
        await until(pilot, "chat-medium loading", lambda: self.fleet.held and "%" in status(app, "chat-medium"))
        app.clear_notifications()  # "loading chat-medium…" lasts 3 s: shown or gone by then, so never shown
        await pilot.pause()
        await self.shoot("loading.svg")
        self.fleet.release()  # the rest of that load, and the log kept back, reach the dashboard now
        await until(pilot, "chat-medium loaded", lambda: status(app, "chat-medium").endswith(" loaded"))

        # The corrupt model: failed with its exit code, its reason in the notification, the card and the log.
        await self.select("2", "broken-q4")
        app.clear_notifications()  # "chat-medium loaded on gpu-box-b (1.5 s)": a time that differs on every run
        await pilot.press("l")

        def failed_shown() -> bool:
            toasts = [str(t.render()) for t in app.screen.query("Toast")]
            return (
                "failed" in status(app, "broken-q4")
                and any("failed to load" in t for t in toasts)  # its toast, alone: "loading broken-q4…" has gone
                and not any("loading broken-q4" in t for t in toasts)
                and any("exiting due to model loading error" in ln.text for ln in app.dashboard.logs.buffer)
            )

        await until(pilot, "broken-q4 failed", failed_shown)
        await self.shoot("failed.svg")
        await self.hub_and_pull()

    async def hub_and_pull(self) -> None:
        """Last, so no screenshot before has the pulled model: the hub screen on workstation with a repo's quants and
        their fit verdicts, then Enter pulls the first one and its row is caught downloading."""
        app, pilot = self.app, self.pilot
        await self.select("1", "chat-small")
        app.clear_notifications()  # broken-q4's failure (gpu-box-a's) is not this picture's
        await pilot.press("d")
        await until(pilot, "the hub screen", lambda: isinstance(app.screen, HubScreen))
        hub = app.screen
        assert isinstance(hub, HubScreen)
        hub.query_one("#hub-query", Input).value = TINY_REPO
        await pilot.press("enter")

        def listed() -> bool:
            status = str(hub.query_one("#hub-status", Static).render())
            return len(hub.rows) == 2 and "quant(s)" in status

        await until(pilot, "the repo's quants and verdicts", listed)
        await self.shoot("hub.svg")

        def downloading(ev: FleetEvent) -> bool:
            return (
                isinstance(ev, ModelsChanged | ModelsUpdated)
                and ev.machine == HUB_MACHINE
                and any(m.id == PULLED and m.state is ModelState.DOWNLOADING and m.download for m in ev.models)
            )

        self.fleet.hold_logs = True
        self.fleet.hold_after = downloading
        await pilot.press("enter")  # the first quant: pulled
        await until(pilot, "the downloading row", lambda: self.fleet.held and "%" in status(app, PULLED))
        await until(pilot, "the hub screen closed", lambda: app.screen is app.dashboard)
        await self.shoot("pulling.svg")
        self.fleet.release()
        await until(pilot, "the pull's end", lambda: PULLED in app.dashboard.model_table.rows_now
                    and "downloading" not in status(app, PULLED))  # fmt: skip


async def shoot(config: Config, out: Path) -> None:
    await demo.start_routers(config)
    await wait_for_startup_models(config)
    fleet = ShotFleet(Fleet(config))
    app = make_app(with_hub(config, HUB_SHOWN), fleet, frozen_time=FROZEN, ascii_mode=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await Director(app, pilot, fleet, out).run()


def with_hub(config: Config, hub: str, cache: Path | None = None) -> Config:
    """HUB_MACHINE with this hub (and download cache): the routers get the real one, the screen HUB_SHOWN."""
    machines = tuple(
        dataclasses.replace(m, hub=hub, hub_cache=str(cache) if cache else m.hub_cache) if m.name == HUB_MACHINE else m
        for m in config.machines
    )
    return dataclasses.replace(config, machines=machines)


MARKER = ".llamaherd-screenshots"
"""Left in the root directory so a later run knows it may remove it (it never removes a directory without it)."""


def fresh_root(root: Path) -> None:
    if root.exists() and any(root.iterdir()) and not (root / MARKER).exists():
        raise SystemExit(f"screenshots: {root} exists and is not a screenshot directory; not removing it")
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    (root / MARKER).write_text("made by python -m scripts.screenshots; removed at the end of each run\n")


def take(out: Path, root: Path = ROOT) -> float:
    """Write FILES into `out`; returns the seconds it took. The routers it started are stopped, `root` removed.

    The screenshots show paths under `root`, so only runs with the same root give the same bytes.
    """
    t0 = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    fresh_root(root)
    os.environ["XDG_STATE_HOME"] = str(root / "state")  # this run's router records and logs, nobody else's
    os.environ.pop("NO_COLOR", None)  # the files are the same whoever makes them
    config = with_ports(demo.prepare(root), fixed=root == ROOT)
    hub = HubStandin(write_tiny_hub(root / "hub"))
    hub.rate = HUB_RATE
    hub.start()
    config = with_hub(config, hub.url, root / "hub-cache")
    try:
        asyncio.run(shoot(config, out))
    finally:
        # Every router under `root` is this run's (its state directory was made above): stop them all.
        asyncio.run(demo.stop_routers(config, [m.name for m in config.machines]))
        hub.stop()
        shutil.rmtree(root, ignore_errors=True)
    return time.monotonic() - t0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m scripts.screenshots",
        description="Write the README's screenshots (SVG) of the dashboard on the real demo fleet.",
    )
    parser.add_argument("dir", type=Path, help="where the SVG files go (e.g. screenshots)")
    parser.add_argument(
        "--root",
        type=Path,
        default=ROOT,
        help=f"the demo's directory, removed and made again (default {ROOT}; its paths are on screen)",
    )
    args = parser.parse_args(argv)
    took = take(args.dir, args.root)
    for name in FILES:
        print(args.dir / name)
    print(f"screenshots: {len(FILES)} files in {took:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
