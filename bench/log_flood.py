"""The log panel under a flood: a managed router's log appended at 20,000 lines/s for 10 s.

The dashboard (the real app on the real Fleet, headless via App.run_test at 140x45) starts and follows a real
managed local router; a separate writer process appends plain `srv` lines to that router's log file at RATE lines
a second, with a spawn line and its child's `[port]` lines now and then (so attribution is exercised), while the
bench presses `f` (toggle the fleet view) every 100 ms. Measured:

- key press -> screen refreshed with the toggle, during the flood (target p95 <= 100 ms);
- after the last line is written, how long until that line is on screen (target <= 1 s);
- the dashboard process's CPU during the flood (target <= 60 % of a core) and its peak RSS (<= 120 MB).

The writer runs in its own process, so its CPU is not counted. Headless paints to nothing, which flatters the CPU
a little against a real terminal.

Then the same flood with `llamaherd logs MACHINE -f` reading it (a pipe: nothing skipped): how long after the
last line is written it comes out, and that process's CPU. And during each flood, other traffic on the same link
(a short command through the transport, `GET /models` through the router client): does the flood stall it?
All of it locally, then over ssh (a real OpenSSH sshd on 127.0.0.1) when sshd is available.

Also a paused panel over 100,000 lines (page-up latency, a search across them, their memory): `scrollback`.

With `wrap`, the log panel wraps its long lines (`W`) throughout, and every 5th flood line is 160 characters longer
(two or three rows wrapped); `cut` is the same flood with the lines cut at the edge, to compare. The scrollback
figures also say what `W` costs over 100,000 lines.

Run: python -m bench.log_flood [RATE] [SECONDS] [local|ssh|scrollback|both] [wrap|cut]
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import psutil
from textual import events

from app.config import Config, MachineConfig, write_config
from app.services.core.log_lines import LogLine
from app.services.core.router_types import RouterState
from app.services.fleet import Fleet
from app.services.lifecycle.llama_server_binary import HOW_TO_GET, find_llama_server
from app.ui.app import make_app
from bench.common import figures, tiny_models, workdir
from tests.helpers.router import preset_text
from tests.helpers.sshd import SshdUnavailable, start_sshd

ROOT = Path(__file__).resolve().parents[1]

WRITER = r"""
import os, sys, time
path, rate, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
tail = " " + "why: " * 32 if sys.argv[4:] == ["long"] else ""  # every 5th line 160 characters longer
total = int(rate * seconds)
fd = os.open(path, os.O_WRONLY | os.O_APPEND)
t0 = time.monotonic()
n = 0
tick = 0.01
port = 41000
while n < total:
    due = min(total, int((time.monotonic() - t0) * rate) + int(rate * tick))
    out = []
    while n < due:
        n += 1
        if n % 5000 == 1:
            port += 1
            spawn = f"spawning server instance with name=flood-{port} on port {port}"
            out.append(f"0.00.{n % 1000:03d}.000 I srv          load: {spawn}\n")
        elif n % 7 == 0:
            out.append(f"[{port}] 0.00.{n % 1000:03d}.000 I slot update_slots: id  0 | task {n} | flood line {n:07d}\n")
        else:
            line = f"0.00.{n % 1000:03d}.000 I srv  update_slots: all slots idle, flood line {n:07d} of {total}"
            out.append(line + (tail if n % 5 == 0 else "") + "\n")
    if out:
        os.write(fd, "".join(out).encode())
    time.sleep(tick)
# A child line of the first spawned model, so `logs -f --model flood-41001` prints it too.
last = f"[41001] 0.00.000.000 I srv  update_slots: the flood is over, LAST LINE {total:07d}\n"
os.write(fd, last.encode())
print(time.monotonic() - t0, flush=True)
"""

LAST = re.compile(r"LAST LINE (\d+)")
WRAP = {"on": False, "long": False}  # the panel wraps (`wrap`); every 5th flood line is long (`wrap` or `cut`)


def append(path: str, text: str) -> None:
    with open(path, "a") as f:
        f.write(text)


def screen_text(app: Any) -> str:
    """What the compositor paints now: every row of the screen, as text."""
    strips = app.screen._compositor.render_strips()
    return "\n".join(s.text for s in strips)


def wrap_actions(app: Any, done: dict[str, list[float]]) -> None:
    def stamp(kind: str) -> None:
        app.call_after_refresh(lambda: done[kind].append(time.perf_counter()))

    dash = app.dashboard
    original_f = dash.action_toggle_fleet

    def toggled() -> None:
        original_f()
        stamp("f")

    dash.action_toggle_fleet = toggled
    for table in (dash.model_table, dash.fleet_table):
        for action in ("action_cursor_down", "action_cursor_up"):
            original = getattr(table, action)

            def moved(original: Any = original) -> None:
                original()
                stamp("cursor")

            setattr(table, action, moved)


async def start_and_wait(fleet: Fleet, name: str, pilot: Any) -> int:
    rec = await fleet.start_router(name)
    deadline = time.monotonic() + 60
    while fleet.view(name).router_state is not RouterState.RUNNING:
        if time.monotonic() > deadline:
            raise SystemExit("the router did not come up")
        await pilot.pause(0.1)
    return rec.pid


async def other_traffic(fleet: Fleet, name: str, out: list[float], stop: asyncio.Event) -> None:
    """A short command through the machine's transport and a GET /models, back to back, timed."""
    m = fleet.machine(name)
    while not stop.is_set():
        t = time.perf_counter()
        try:
            await m.transport.run(["true"], timeout=30)
            await (await m.router_client()).models()
        except Exception as e:  # a stalled loop shows as a timeout: that is the figure, not a failure of the bench
            print(f"[{name}] other traffic: {type(e).__name__}: {e}", flush=True)
        out.append((time.perf_counter() - t) * 1000)
        await asyncio.sleep(0.2)


async def flood(log_path: str, rate: int, seconds: float) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        WRITER,
        log_path,
        str(rate),
        str(seconds),
        *(["long"] if WRAP["long"] else []),
        stdout=asyncio.subprocess.PIPE,
    )


async def dashboard(cfg: Config, name: str, rate: int, seconds: float) -> str:
    fleet = Fleet(cfg)
    app = make_app(cfg, fleet)
    proc = psutil.Process()
    router_pid = 0
    total = int(rate * seconds)
    async with app.run_test(size=(140, 45)) as pilot:
        try:
            router_pid = await start_and_wait(fleet, name, pilot)
            if WRAP["on"]:
                app.dashboard.logs.action_toggle_wrap()
            manager = fleet.machine(name).manager
            assert manager is not None
            log_path = await manager.log_path()
            await pilot.pause(1.0)
            quiet: list[float] = []
            stop = asyncio.Event()
            probe = asyncio.create_task(other_traffic(fleet, name, quiet, stop))
            await asyncio.sleep(2.0)
            stop.set()
            await probe
            rss0 = proc.memory_info().rss

            # Keys: in the flood's first half down/up every 0.2 s (a cursor move in the model table), in its second
            # half f every 0.5 s (the fleet view and back: a heavier repaint, the footer's keys change). A key's
            # latency runs from its delivery to the refresh after its action ran.
            done: dict[str, list[float]] = {"cursor": [], "f": []}
            wrap_actions(app, done)
            app.dashboard.model_table.focus()
            sent: dict[str, list[float]] = {"cursor": [], "f": []}
            writer = await flood(log_path, rate, seconds)
            c0 = proc.cpu_times()
            w0 = time.monotonic()
            rss_peak = rss0
            busy: list[float] = []
            stop = asyncio.Event()
            probe = asyncio.create_task(other_traffic(fleet, name, busy, stop))
            k = 0
            while writer.returncode is None:
                first_half = time.monotonic() - w0 < seconds / 2
                key = ("down", "up")[k % 2] if first_half else "f"
                k += 1
                ev = events.Key(key, None)
                ev.set_sender(app)
                sent["f" if key == "f" else "cursor"].append(time.perf_counter())
                app._driver.send_message(ev)  # type: ignore[union-attr]  # as a terminal would deliver it
                rss_peak = max(rss_peak, proc.memory_info().rss)
                await asyncio.sleep(0.2 if first_half else 0.5)
            t_end = time.monotonic()
            c1 = proc.cpu_times()
            stop.set()
            await probe
            out, _ = await writer.communicate()
            wrote_for = float(out.decode().strip() or 0)
            cpu = (c1.user + c1.system - c0.user - c0.system) / (t_end - w0) * 100

            # ---- the newest line on screen ----
            shown_at: float | None = None
            seen = ""
            while time.monotonic() - t_end < 10:
                painted = asyncio.Event()
                app.call_after_refresh(painted.set)
                app.screen.refresh()
                await painted.wait()
                txt = screen_text(app)
                m = LAST.search(txt)
                if m and int(m.group(1)) == total:
                    shown_at = time.monotonic() - t_end
                    break
                nums = re.findall(r"flood line (\d+)", txt)
                seen = max(nums) if nums else seen
                await asyncio.sleep(0.05)
            rss_peak = max(rss_peak, proc.memory_info().rss)
            await pilot.pause(0.5)
            last_rows = [r for r in screen_text(app).splitlines() if "flood" in r or "skipped" in r][-3:]
            subtitle = str(app.dashboard.logs.border_subtitle)
        finally:
            if router_pid:
                await fleet.stop_router(name)
                await pilot.pause(1.0)  # the app shows it before it closes (a paint due at exit found no widgets)
    lines = [f"[{name}] dashboard: flood of {total:,} lines at {rate:,}/s, written in {wrote_for:.1f} s"]
    for kind, label in (
        ("cursor", "key press (down/up) -> cursor moved, painted"),
        ("f", "key press (f) -> view toggled, painted"),
    ):
        n = min(len(sent[kind]), len(done[kind]))
        lat = [(done[kind][i] - sent[kind][i]) * 1000 for i in range(n)]
        if lat:
            lines.append(figures(f"[{name}] {label}, during the flood", lat))
        lines.append(f"[{name}]   {kind} keys sent {len(sent[kind])}, handled and painted {len(done[kind])}")
    if shown_at is None:
        lines.append(f"[{name}] newest line NOT on screen 10 s after the flood (last flood line seen: {seen or '-'})")
    else:
        lines.append(f"[{name}] newest line on screen {shown_at * 1000:.0f} ms after the flood ended")
    lines.append(f"[{name}] dashboard CPU during the flood: {cpu:.0f} % of one core")
    lines.append(f"[{name}] RSS before {rss0 / 2**20:.0f} MB, peak {rss_peak / 2**20:.0f} MB")
    if quiet and busy:
        lines.append(figures(f"[{name}] other traffic (command + GET /models), quiet", quiet))
        lines.append(figures(f"[{name}] other traffic (command + GET /models), during the flood", busy))
    lines.append(f"[{name}] panel: {subtitle}")
    lines += [f"[{name}]   | " + r.strip()[:120] for r in last_rows]
    return "\n".join(lines)


FIRST_MODEL = "flood-41001"  # the writer's first spawned model: its child lines are the flood's first 5,000's 7th


async def cli(cfg: Config, name: str, rate: int, seconds: float, d: Path, model: str | None = None) -> str:
    """`llamaherd logs NAME -f` under the same flood: every line comes out, and how late the last one does.
    With `model`, `--model` too: only that model's lines come out, and the filter should cost no more than the
    parse (every line is parsed either way, for the attribution)."""
    path = d / f"{name}.toml"
    write_config(cfg, path)
    fleet = Fleet(cfg)
    m = fleet.machine(name)
    assert m.manager is not None
    await m.manager.start()
    try:
        log_path = await m.manager.log_path()
        reader = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "app", "--config", str(path), "logs", name, "-f", "-n", "0",
            *(("--model", model) if model else ()),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=str(ROOT),
        )  # fmt: skip
        assert reader.stdout is not None
        # Following for real only once a line written now comes out (over ssh, under load, that took seconds:
        # the flood's first lines went by before the tail had started).
        seen = b""
        deadline = time.monotonic() + 60
        ready = "[41001] 0.00.000.000 I srv  bench: ready?\n" if model else "0.00.000.000 I srv  bench: ready?\n"
        if model:  # the port is learnt from its spawn line, as the router would write it
            spawn = f"spawning server instance with name={model} on port 41001"
            append(log_path, f"0.00.000.000 I srv          load: {spawn}\n")
        while b"bench: ready?" not in seen and time.monotonic() < deadline:
            append(log_path, ready)
            with contextlib.suppress(TimeoutError):
                seen += await asyncio.wait_for(reader.stdout.readline(), 0.5)
        if b"bench: ready?" not in seen:
            raise SystemExit(f"[{name}] logs -f never started following")
        await asyncio.sleep(0.5)
        rp = psutil.Process(reader.pid)
        c0 = rp.cpu_times()
        w0 = time.monotonic()
        writer = await flood(log_path, rate, seconds)
        got = 0
        partial = b""
        t_end: float | None = None
        last_at: float | None = None
        total = int(rate * seconds)
        deadline = time.monotonic() + seconds + 30
        pending: asyncio.Task[bytes] | None = None
        while time.monotonic() < deadline:
            if t_end is None and writer.returncode is not None:
                t_end = time.monotonic()
            # One read in flight at a time, never cancelled (a cancelled read can lose what it had read).
            pending = pending or asyncio.create_task(reader.stdout.read(1 << 20))
            finished, _ = await asyncio.wait({pending}, timeout=0.2)
            if not finished:
                continue
            chunk, pending = pending.result(), None
            if not chunk:
                break
            *whole, partial = (partial + chunk).split(b"\n")
            got += sum(1 for ln in whole if b"flood line" in ln)
            if any(b"LAST LINE" in ln for ln in whole):
                last_at = time.monotonic()
                break
        c1 = rp.cpu_times()
        if pending is not None:
            pending.cancel()
        await writer.communicate()
        if t_end is None:
            t_end = time.monotonic()
        reader.kill()
        _, errs = await reader.communicate()
        if errs.strip():
            print(f"[{name}] logs -f said: {errs.decode(errors='replace').strip()[-600:]}", flush=True)
    finally:
        await m.manager.stop()
        await fleet.close()
    cpu = (c1.user + c1.system - c0.user - c0.system) / (max(t_end, last_at or t_end) - w0) * 100
    expected = total - total // 5000 - (1 if total % 5000 else 0)  # the spawn lines carry no "flood line"
    if model:
        expected = sum(1 for n in range(1, min(total, 5000) + 1) if n % 7 == 0 and n % 5000 != 1)
    lag = f"{(last_at - t_end) * 1000:.0f} ms after the flood ended" if last_at else "NOT within 30 s"
    return (
        f"[{name}] logs -f{' --model ' + model if model else ''}: {got:,} of {expected:,} flood lines out, "
        f"the last one {lag}; "
        f"its CPU {cpu:.0f} % of one core"
    )


def packed_cost(lines: list[LogLine]) -> int:
    """What the lines cost once in a Scrollback (the panel's and each machine's): what its packing allocated and
    kept (the parsed lines were allocated before tracing began, so they are not counted)."""
    from app.services.logs.scrollback import Scrollback

    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kept = Scrollback(len(lines))
    kept.extend(lines)
    cost = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return cost if kept else 0


async def scrollback(n: int = 100_000) -> str:
    """A paused panel over `n` lines: page-up latency, a search across them, and what the lines cost."""
    from textual.app import App, ComposeResult

    from app.services.logs.parse import LogAttributor
    from app.ui.dashboard.log_panel import LogPanel
    from app.ui.text.glyphs import UNICODE

    att = LogAttributor()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    lines = [
        att.parse(f"[4100{i % 3}] 0.01.{i % 1000:03d}.000 I slot update_slots: id  0 | task {i} | n_past = {i}")
        for i in range(n)
    ]
    cost = sum(st.size_diff for st in tracemalloc.take_snapshot().compare_to(before, "filename"))
    tracemalloc.stop()
    packed = packed_cost(lines)

    class One(App[None]):
        def compose(self) -> ComposeResult:
            yield LogPanel(UNICODE, n)

    app = One()
    async with app.run_test(size=(140, 45)) as pilot:
        panel = app.query_one(LogPanel)
        panel.set_source("bench", lines)
        panel.focus()
        await pilot.pause(0.3)
        t = time.perf_counter()
        panel.action_toggle_wrap()  # every line counted for the panel's width
        painted = asyncio.Event()
        app.call_after_refresh(painted.set)
        await painted.wait()
        wrap_ms = (time.perf_counter() - t) * 1000
        if not WRAP["on"]:
            panel.action_toggle_wrap()
        await pilot.pause(0.3)
        done: list[float] = []
        original = panel.action_page_up

        def paged() -> None:
            original()
            app.call_after_refresh(lambda: done.append(time.perf_counter()))

        panel.action_page_up = paged  # type: ignore[method-assign]
        sent: list[float] = []
        for _ in range(40):
            ev = events.Key("pageup", None)
            ev.set_sender(app)
            sent.append(time.perf_counter())
            app._driver.send_message(ev)  # type: ignore[union-attr]
            await asyncio.sleep(0.05)
        await pilot.pause(0.5)
        t = time.perf_counter()
        panel.set_search(f"task {n // 2} ")
        painted = asyncio.Event()
        app.call_after_refresh(painted.set)
        await painted.wait()
        search_ms = (time.perf_counter() - t) * 1000
        found = panel.line_count
    lat = [(done[i] - sent[i]) * 1000 for i in range(min(len(sent), len(done)))]
    return "\n".join([
        f"[scrollback] {n:,} parsed lines cost {cost / 2**20:.1f} MB ({cost / n:.0f} bytes a line, text included)",
        f"[scrollback] packed in a scrollback, they cost {packed / 2**20:.1f} MB ({packed / n:.0f} bytes a line)",
        f"[scrollback] W (wrap) over {n:,} lines -> painted: {wrap_ms:.0f} ms",
        figures(f"[scrollback] page up in a paused panel of {n:,} lines{' (wrapped)' * WRAP['on']} -> painted", lat),
        f"[scrollback] search across {n:,} lines -> painted: {search_ms:.0f} ms ({found} line found)",
    ])  # fmt: skip


async def main(rate: int, seconds: float, where: str) -> None:
    if where in ("scrollback", "both"):
        print(await scrollback(), flush=True)
    if where == "scrollback":
        return
    if find_llama_server() is None:
        raise SystemExit(HOW_TO_GET)
    d = workdir()
    models = tiny_models(d)
    preset = d / "flood.ini"
    preset.write_text(preset_text({"alpha": models["alpha"]}))
    os.environ["XDG_STATE_HOME"] = str(d / "state")
    report: list[str] = []
    if where in ("local", "both"):
        local = Config(machines=(MachineConfig(name="local", preset=str(preset), models_dirs=(str(d),)),))
        report.append(await dashboard(local, "local", rate, seconds))
        report.append(await cli(local, "local", rate, seconds, d))
        report.append(await cli(local, "local", rate, seconds, d, FIRST_MODEL))
        print("\n".join(report), flush=True)
    if where in ("ssh", "both"):
        try:
            server = start_sshd(d / "sshd")
        except SshdUnavailable as e:
            print(f"ssh figures skipped: {e}")
            return
        try:
            far = MachineConfig(
                name="far", host=server.host, port=server.port, user=server.user, identity_file=server.client_key,
                known_hosts=server.known_hosts, router="bench-flood-ssh", preset=str(preset), models_dirs=(str(d),),
                program=find_llama_server(),
            )  # fmt: skip
            ssh = Config(machines=(far,))
            more = [await dashboard(ssh, "far", rate, seconds), await cli(ssh, "far", rate, seconds, d)]
            more.append(await cli(ssh, "far", rate, seconds, d, FIRST_MODEL))
            print("\n".join(more), flush=True)
        finally:
            server.stop()


if __name__ == "__main__":
    a = sys.argv[1:]
    WRAP["on"], WRAP["long"] = a[3:4] == ["wrap"], a[3:4] in (["wrap"], ["cut"])
    asyncio.run(main(int(a[0]) if a else 20000, float(a[1]) if len(a) > 1 else 10.0, a[2] if len(a) > 2 else "both"))
