"""Headless machine commands: status, start, stop, logs."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import time
from typing import Any

from app.cli.context import CliContext
from app.cli.history_cmds import note_router
from app.cli.output import err, human_size
from app.cli.port_memo import last_port, remember
from app.cli.status_schema import model_entry, stable
from app.cli.wording import say
from app.services.core.errors import HerdError, RouterNotAnswering
from app.services.core.host_types import HostStats
from app.services.core.router_types import ModelInfo, ModelState, RouterState
from app.services.core.textsafe import visible, visible_lines
from app.services.history.scope import router_scope
from app.services.hosts import proc_probes
from app.services.hosts.child_memory import ChildProbe, memory_of
from app.services.hosts.local import LocalTransport
from app.services.lifecycle.manager import RouterStatus
from app.services.logs.parse import LogAttributor
from app.services.machine.machine import Machine
from app.services.machine.model_memory import ATTACHED, NOT_RUNNING, probe_children, running_of, unknown
from app.services.router.client import HEALTH_BOUND, LINK_ROUND_TRIPS, RouterClient

STATUS_TIMEOUT = 10.0


def uptime(seconds: float) -> str:
    s = int(seconds)
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    if d:
        return f"{d}d{h}h"
    if h:
        return f"{h}h{m:02d}m"
    return f"{m}m{s:02d}s" if m else f"{s}s"


async def machine_status(m: Machine) -> dict[str, Any]:
    out: dict[str, Any] = {"machine": m.name, "host": m.cfg.host}
    try:
        async with asyncio.timeout(STATUS_TIMEOUT) as bound:
            if m.manager is not None:
                m.manager.ask_early()  # the record's look rides along with the agent's start
            # So does the first host-stats sample (as host_stats runs it): the second, 0.3 s later for the CPU %,
            # is asked when the agent answers, a round trip sooner. The router's answers (a forwarded channel, then
            # the request) end a status of a running router later anyway; this shortens that of a stopped one.
            m.transport.ask_early(["sh", "-c", proc_probes.HOST_STATS_SCRIPT, "sh"])
            await m.transport.connect()
            out["connection"] = m.transport.state.value
            guess = last_port(router_scope(m.cfg)) if m.manager is not None and not m.transport.is_local else None
            if guess is not None:
                # The router's two channels (/health, /models) open while the record is read, on the port it had
                # last time: right, they save a round trip; wrong, they are closed unused.
                local = await m.transport.forward_port(guess)
                m.transport.warm_forward(local)
                m.transport.warm_forward(local)
            # Over ssh every step below is a round trip: the independent ones are asked together (the agent
            # answers them in parallel), so a status costs about four after the connection.
            first = asyncio.ensure_future(m.transport.host_stats())  # CPU % is a difference between two samples
            t0 = time.monotonic()
            client, pid = await _router_part(m, out)

            async def second_stats() -> HostStats:
                await first
                # Room for a slow link, known once its round trip has been measured (by the answers so far).
                when = bound.when()
                if when is not None:
                    bound.reschedule(when + LINK_ROUND_TRIPS * m.transport.round_trip())
                await asyncio.sleep(max(0.0, 0.3 - (time.monotonic() - t0)))
                return await m.transport.host_stats()

            # The router is asked at once, while the second sample waits for the first one's answer.
            stats, models, _, probe = await asyncio.gather(
                second_stats(), _models_part(m, out, client), _rss(m, pid, out), _children(m, pid)
            )
            _memory_into(out, models, probe, attached=m.manager is None)
            out["cpu_pct"] = round(stats.cpu_pct, 1)
            out["mem_used"], out["mem_total"] = stats.mem_used, stats.mem_total
            out["load_avg"] = list(stats.load_avg)
            out["gpus"] = [vars(g) for g in stats.gpus]
    except TimeoutError:
        out.setdefault("connection", "unreachable")
        out["reason"] = f"no answer within {STATUS_TIMEOUT:.0f} s"
    except HerdError as e:
        out.setdefault("connection", m.transport.state.value)
        if out.get("connection") != "local":
            out["connection"] = "unreachable"
        out["reason"] = say(e)
    if "router" not in out:  # the machine was not reached: its router could not be asked
        out["router"] = RouterState.UNKNOWN.value
    return stable(out)


async def _rss(m: Machine, pid: int | None, out: dict[str, Any]) -> None:
    if pid is not None:
        out["rss"] = await m.transport.process_tree_rss(pid)


async def _children(m: Machine, pid: int | None) -> ChildProbe | str:
    """The router's children (each model's memory), asked with the router's answers: not one more round trip.
    Why not, as text, when they cannot be read."""
    if pid is None:
        return NOT_RUNNING
    try:
        return await probe_children(m.transport, pid)
    except HerdError as e:
        return say(e)


def _memory_into(out: dict[str, Any], models: tuple[ModelInfo, ...], probe: ChildProbe | str, attached: bool) -> None:
    running = running_of(models)
    if not running:
        return
    if attached:
        mems = unknown(running, ATTACHED)
    elif isinstance(probe, str):
        mems = unknown(running, probe)
    else:
        mems = memory_of(probe, running)
    out["models"] = [model_entry(x, mems.get(x.id)) for x in models]


async def _router_part(m: Machine, out: dict[str, Any]) -> tuple[RouterClient | None, int | None]:
    """The router's record and process into `out`; a client for it when it runs (an attached one is asked), and
    the pid whose process tree's RSS is to be read (with the router's answers: not one more round trip)."""
    if m.manager is None:
        out["router"] = RouterState.ATTACHED.value
        out["url"] = m.cfg.url
        try:
            return await m.connect_router(), None
        except HerdError as e:
            out["router"] = RouterState.UNREACHABLE.value
            out["reason"] = say(e)
            return None, None
    st = await m.manager.inspect()
    out["router"] = st.state.value
    out["reason"] = st.reason
    out["log_tail"] = list(st.log_tail)
    if st.record is not None:
        out.update(pid=st.record.pid, port=st.record.port)
        # Whether it requires a key (never the key itself: `llamaherd key` prints that on purpose).
        out["api_key"] = "required" if st.record.requires_key else "none"
        if st.state is RouterState.RUNNING:
            out["uptime_s"] = round(time.time() - st.record.started_at, 1)
            url = f"http://127.0.0.1:{st.record.port}"
            return await m.client_for(url, st.record), st.record.pid
    return None, None


async def _models_part(m: Machine, out: dict[str, Any], client: RouterClient | None) -> tuple[ModelInfo, ...]:
    """The router's models into `out`, and returned (none when it was not asked or did not answer)."""
    if client is None:
        return ()
    try:
        # /health and the list are asked together; /health bounded first decides (a stopped router's process
        # looks alive, only its silence tells).
        models_asked = asyncio.ensure_future(client.models())
        try:
            await client.health(timeout=HEALTH_BOUND)
            models = await models_asked
        finally:
            if not models_asked.done():
                models_asked.cancel()
            with contextlib.suppress(BaseException):
                await models_asked
        out["models_loaded"] = sum(1 for x in models if x.state is ModelState.LOADED)
        out["models_known"] = len(models)
        out["models_failed"] = [x.id for x in models if x.state is ModelState.FAILED or x.failed]
        out["models"] = [model_entry(x) for x in models]
        return tuple(models)
    except RouterNotAnswering as e:
        out["router"] = RouterState.NOT_ANSWERING.value
        out["reason"] = str(e)
    except HerdError as e:
        out["router"] = RouterState.UNREACHABLE.value if m.manager is None else out["router"]
        out["reason"] = say(e)
    return ()


def format_status(s: dict[str, Any]) -> str:
    router = s.get("router", "?")
    bits = [f"{s['machine']:<14}", f"{s.get('connection', '?'):<11}"]
    if router == RouterState.RUNNING:
        bits.append(f"running pid {s.get('pid')} port {s.get('port')} up {uptime(s.get('uptime_s') or 0)}")
        if s.get("api_key") == "required":
            bits.append("API key required")
    else:
        bits.append(router)
    if s.get("cpu_pct") is not None:
        bits.append(f"cpu {s['cpu_pct']:.0f}%  mem {human_size(s['mem_used'])}/{human_size(s['mem_total'])}")
        for g in s.get("gpus", []):
            bits.append(f"gpu {g['name']} {g['memory_used_mb']:.0f}/{g['memory_total_mb']:.0f}M")
    if router in (RouterState.RUNNING, RouterState.ATTACHED):
        bits.append(f"models {s['models_loaded']}/{s['models_known']} loaded")
    if s.get("rss"):
        bits.append(f"rss {human_size(s['rss'])}")
    lines = ["  ".join(bits)]
    if router == RouterState.RUNNING and s.get("api_key") == "none":
        lines.append(f"    {open_router_text(s['machine'])}")
    if s.get("reason"):
        lines.append(f"    {s['reason']}")
    for ln in s.get("log_tail", [])[-5:]:
        lines.append(f"    | {ln}")
    for f in s.get("models_failed", []):
        lines.append(f"    failed: {f}")
    return "\n".join(lines)


def open_router_text(machine: str) -> str:
    return (
        "open: no API key (started before llamaherd required one; anyone on that host can use it). "
        f"Restart it to require one: x then s in the dashboard, or llamaherd stop {machine}; llamaherd start {machine}"
    )


async def cmd_status(ctx: CliContext, args: argparse.Namespace) -> int:
    machines = [Machine(c, emit=lambda ev: None) for c in ctx.config.effective_machines]
    try:
        results = await asyncio.gather(*(machine_status(m) for m in machines))
    finally:
        await asyncio.gather(*(m.close() for m in machines), return_exceptions=True)
    with contextlib.suppress(HerdError):
        remember({router_scope(m.cfg): r["port"] for m, r in zip(machines, results, strict=True)
                  if r["port"] and r["router"] == RouterState.RUNNING and not m.cfg.is_local})  # fmt: skip
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        for r in results:
            print(visible_lines(format_status(r)))
    return 0


async def cmd_start(ctx: CliContext, args: argparse.Namespace) -> int:
    async with ctx.managed(args.machine, "its router is not ours to start") as (m, manager):
        t0 = time.monotonic()
        try:
            rec, started = await manager.start()
        except HerdError as e:
            err(f"could not start the router on {m.name}: {say(e)}")
            return 1
        took = time.monotonic() - t0
        if started:
            await note_router(m.cfg, "absent", "running", f"pid {rec.pid}", "start")
    if not m.cfg.is_local:  # the next status opens its channels to the router at once (cli/port_memo.py)
        with contextlib.suppress(HerdError):
            remember({router_scope(m.cfg): rec.port})
    verb = f"started in {took:.1f} s" if started else "already running (adopted)"
    where = f"pid {rec.pid}, port {rec.port} on 127.0.0.1, preset {rec.preset}, log {rec.log}"
    print(visible(f"{m.name}: router {verb}: {where}"))
    return 0


async def cmd_stop(ctx: CliContext, args: argparse.Namespace) -> int:
    async with ctx.managed(args.machine, "llamaherd does not stop somebody else's router") as (m, manager):
        st = await manager.stop()
        if not st.already:
            await note_router(m.cfg, "running", "stopped", st.reason, "stop")
    if st.already:
        print(visible_lines(f"{m.name}: router {already_stopped(st)}"))
        return 0
    pid = f" (pid {st.record.pid})" if st.record else ""
    print(visible_lines(f"{m.name}: router {st.state}{pid}" + (f": {st.reason}" if st.reason else "")))
    return 0


def already_stopped(st: RouterStatus, now: float | None = None) -> str:
    """A stop that found nothing to stop says so (and since when, if the record knows), not "stopped" again."""
    if st.state is not RouterState.STOPPED or st.record is None:
        return f"not running: {st.reason}" if st.reason else f"not running ({st.state.value})"
    rec = st.record
    since = ""
    if rec.stopped_at:
        ago = max((time.time() if now is None else now) - rec.stopped_at, 0.0)
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(rec.stopped_at))
        since = f" (since {when}, {uptime(ago)} ago)"
    return f"already stopped{since}: pid {rec.pid}, {st.reason}"


async def cmd_logs(ctx: CliContext, args: argparse.Namespace) -> int:
    if args.output and args.follow:
        err("logs: -o/--output writes the last lines once; it cannot follow (-f)")
        return 2
    async with ctx.managed(args.machine, "its log is on the machine of whoever runs it") as (m, manager):
        att = LogAttributor()
        # A stopped router still has a log; ports then come from its spawn lines.
        with contextlib.suppress(HerdError):
            att.learn_models(await (await m.connect_router()).models())
        path = await manager.log_path()
        want = args.lines
        if not args.follow:
            scan = max(want * 20, 2000) if args.model else want
            raw = await manager.log_tail(scan, path)
            lines = [att.parse(r) for r in raw]
            if args.model:
                lines = [ln for ln in lines if ln.model == args.model]
            if args.output:  # the lines as they are (a file, not a terminal), written whole or not at all, 0600
                text = "".join(f"{ln.raw}\n" for ln in lines[-want:]).encode(errors="surrogateescape")
                await LocalTransport("here").write_file_atomic(args.output, text)
                print(f"{len(lines[-want:]):,} lines written to {visible(args.output)}", file=sys.stderr)
                return 0
            for ln in lines[-want:]:
                print(visible(ln.raw))
            return 0
        # A pipe skips nothing: every line is parsed (the attribution needs it) and written, a chunk per write.
        # Nothing queues up: while stdout is full, the next chunk is not read (the ssh channel's window, or the
        # local file, holds the rest).
        async for chunk in m.transport.tail_chunks(path, lines=max(want * 20, 2000) if args.model else want):
            parsed = [att.parse(text) for text in chunk]
            out = [visible(ln.raw) for ln in parsed if not args.model or ln.model == args.model]
            if out:
                sys.stdout.write("\n".join(out) + "\n")
                sys.stdout.flush()
    return 0


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "status",
        help="every machine: connection, router, host stats, models",
        description="Every machine at once: connection state, router state with pid, port and "
        "uptime (or why it is down, with the log's last lines), host stats, models loaded/known.",
    )
    p.add_argument("--json", action="store_true", help="print the status as JSON")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser(
        "start",
        help="start a machine's router (or adopt the one running)",
        description="Start the router on a machine, detached so it outlives llamaherd; "
        "adopts the router already running there instead of starting a second one.",
    )
    p.add_argument("machine", help='machine name from config.toml ("local" without a config)')
    p.set_defaults(func=cmd_start)

    p = sub.add_parser(
        "stop",
        help="stop a machine's router (its models are unloaded)",
        description="Stop the router on a machine, on request: every model it holds is unloaded.",
    )
    p.add_argument("machine", help="machine name from config.toml")
    p.set_defaults(func=cmd_stop)

    p = sub.add_parser(
        "logs",
        help="show (or follow) a router's log",
        description="Print the router's log from the serving machine; child lines are attributed to their model.",
    )
    p.add_argument("machine", help="machine name from config.toml")
    p.add_argument("-f", "--follow", action="store_true", help="keep printing new lines until interrupted")
    p.add_argument("--model", metavar="M", help="only this model's lines")
    p.add_argument("-n", "--lines", type=int, default=50, metavar="N", help="how many lines (default 50)")
    p.add_argument(
        "-o", "--output", metavar="FILE", type=os.path.abspath,
        help="write the lines to FILE as they are (atomically, mode 0600) instead of printing them; not with -f",
    )  # fmt: skip
    p.set_defaults(func=cmd_logs)
