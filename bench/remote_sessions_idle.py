"""Remote sessions an idle dashboard opens per minute: one ssh machine (a real OpenSSH sshd on 127.0.0.1, the
fixture server of tests/helpers/sshd.py) with one managed router, followed by a Machine as the dashboard follows it
(host stats, the router's process-tree RSS, its event stream and log tail). After a settling time the bench
counts, over a window, the ssh sessions sshd started (its "Starting session:" lines at LogLevel VERBOSE: each is
one channel that ran a command, and one start of the user's login shell), the commands run through the
remote agent (ssh_agent.py), and the CPU time used on the far side (user + system of sshd and its descendants,
their reaped children's included). With --processes, also the processes that ran and ended there in the second
half of the window (strace -f attached to sshd and every process below it, tracing no system call: it reports each
process's exit); opt-in, as ptrace slows and can stall what it follows.

Two runs: the per-command path (one session per command, as before the agent) and the agent. Then what one
small command costs on each path when the remote user's .bashrc takes 0.3 s (conda, pyenv, nvm init).

Run: python -m bench.remote_sessions_idle [--seconds S] [--settle S] [--only agent|per-command] [--processes]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import time
from pathlib import Path

import psutil

from app.config import MachineConfig
from app.services.core.fleet_events import FleetEvent, HostStatsChanged
from app.services.core.router_types import RouterState
from app.services.lifecycle.llama_server_binary import HOW_TO_GET, find_llama_server
from app.services.machine.machine import Machine
from app.services.ssh.transport import SshTransport
from bench.common import figures, tiny_models, workdir
from tests.helpers.router import preset_text
from tests.helpers.sshd import SshdUnavailable, SshServer, start_sshd


def _sessions(server: SshServer) -> int:
    return server.log_text().count("Starting session:")


def _trace_exits(server: SshServer, out: Path, wanted: bool) -> subprocess.Popen[bytes] | None:
    """strace following sshd and everything under it, printing only process exits; None without strace."""
    strace = shutil.which("strace")
    if strace is None or not wanted:
        return None
    pids = [server.pid] + [p.pid for p in psutil.Process(server.pid).children(recursive=True)]
    argv = [strace, "-f", "-q", "-e", "trace=none", "-o", str(out)]
    for pid in pids:
        argv += ["-p", str(pid)]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)  # attached
    return proc


def _tree_cpu(server: SshServer) -> float:
    """CPU seconds used so far by sshd and every process below it, the children they reaped included."""
    total = 0.0
    try:
        procs = [psutil.Process(server.pid), *psutil.Process(server.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0.0
    for p in procs:
        try:
            c = p.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += c.user + c.system + c.children_user + c.children_system
    return total


def _exits(proc: subprocess.Popen[bytes] | None, out: Path) -> int | None:
    if proc is None:
        return None
    proc.terminate()  # strace detaches and leaves the traced processes running
    proc.wait(10)
    text = out.read_text(errors="replace")
    return text.count("+++ exited with") + text.count("+++ killed by")


async def _until(cond: object, timeout: float) -> None:
    async with asyncio.timeout(timeout):
        while not cond():  # type: ignore[operator]
            await asyncio.sleep(0.1)


async def measure(
    server: SshServer, d: Path, program: str, agent: bool, settle: float, seconds: float, processes: bool = False
) -> str:
    name = "agent" if agent else "per-command"
    (d / name).mkdir()
    preset = d / name / "models.ini"
    preset.write_text(preset_text(dict(tiny_models(d / name))))
    cfg = MachineConfig(
        name="far", host=server.host, port=server.port, user=server.user, identity_file=server.client_key,
        known_hosts=server.known_hosts, router=f"bench-idle-{name}", program=program, preset=str(preset),
    )  # fmt: skip
    t = SshTransport(
        "far", server.host, user=server.user, port=server.port, identity_file=server.client_key,
        known_hosts=server.known_hosts, ssh_config="/dev/null", agent=agent,
    )  # fmt: skip
    events: list[FleetEvent] = []
    m = Machine(cfg, events.append, transport=t)
    assert m.manager is not None
    try:
        await m.manager.start()
        m.start()
        await _until(lambda: m.view.router_state is RouterState.RUNNING, 60)
        await _until(lambda: any(isinstance(e, HostStatsChanged) for e in events), 30)
        await asyncio.sleep(settle)
        sessions0, stats0 = _sessions(server), sum(isinstance(e, HostStatsChanged) for e in events)
        agent0 = t.agent.agent.requests if t.agent.agent is not None else 0
        cpu0 = _tree_cpu(server)
        t0 = time.monotonic()
        await asyncio.sleep(seconds / 2)  # half the window untraced, for the CPU figure (strace slows what it follows)
        cpu = _tree_cpu(server) - cpu0
        cpu_window = time.monotonic() - t0
        tracer = _trace_exits(server, d / name / "exits.txt", processes)
        t1 = time.monotonic()
        await asyncio.sleep(seconds / 2)
        exits = _exits(tracer, d / name / "exits.txt")
        traced = time.monotonic() - t1
        took = time.monotonic() - t0
        sessions = _sessions(server) - sessions0
        stats = sum(isinstance(e, HostStatsChanged) for e in events) - stats0
        requests = (t.agent.agent.requests if t.agent.agent is not None else 0) - agent0
        per_min = 60.0 / took
        up = f"agent up (started {t.agent.starts}x)" if t.agent.agent is not None else "no agent"
        procs = "" if exits is None else f"remote processes/min {exits * 60.0 / traced:.0f}, "
        return (
            f"{name:12s}: {sessions * per_min:5.1f} ssh sessions/min, {requests * per_min:5.1f} agent "
            f"requests/min, {procs}remote CPU {cpu * 100 / cpu_window:.2f} % of a core, "
            f"{stats * per_min:4.1f} host-stats updates/min ({up}; window {took:.0f} s)"
        )
    finally:
        await m.manager.stop()
        await m.close()


async def command_cost(server: SshServer, agent: bool, n: int = 10) -> str:
    rc = server.workdir / "home" / ".bashrc"
    rc.write_text("sleep 0.3\n")
    t = SshTransport(
        "far", server.host, user=server.user, port=server.port, identity_file=server.client_key,
        known_hosts=server.known_hosts, ssh_config="/dev/null", agent=agent,
    )  # fmt: skip
    try:
        await t.connect()
        await t.run(["true"])  # the agent (where used) starts here, paying the .bashrc once
        ms = []
        cpu0 = _tree_cpu(server)
        for _ in range(n):
            t0 = time.perf_counter()
            res = await t.run(["cat", "/proc/loadavg"])
            ms.append((time.perf_counter() - t0) * 1000)
            assert res.ok, res
        await asyncio.sleep(0.5)  # the last session's processes reaped
        cpu_ms = (_tree_cpu(server) - cpu0) * 1000 / n
    finally:
        await t.close()
        rc.unlink()
    label = f"one command, 0.3 s .bashrc, {'agent' if agent else 'per-command'}"
    return f"{figures(label, ms)}; remote CPU {cpu_ms:.1f} ms per command"


async def main(seconds: float, settle: float, only: str | None, processes: bool = False) -> None:
    program = find_llama_server()
    if program is None:
        raise SystemExit(HOW_TO_GET)
    d = workdir()
    try:
        server = start_sshd(d / "sshd")
    except SshdUnavailable as e:
        raise SystemExit(str(e)) from None
    try:
        print(f"one ssh machine, one managed router, idle; settle {settle:g} s, then count for {seconds:g} s")
        for agent in (False, True):
            if only is None or only == ("agent" if agent else "per-command"):
                print(await measure(server, d, str(program), agent, settle, seconds, processes), flush=True)
        for agent in (False, True):
            print(await command_cost(server, agent), flush=True)
    finally:
        server.cut_connections()
        server.stop()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=40.0)
    ap.add_argument("--settle", type=float, default=5.0)
    ap.add_argument("--only", choices=["agent", "per-command"])
    ap.add_argument("--processes", action="store_true", help="also count remote processes (needs strace)")
    a = ap.parse_args()
    asyncio.run(main(a.seconds, a.settle, a.only, a.processes))
