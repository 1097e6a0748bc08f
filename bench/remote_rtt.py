"""Headless commands over a slow link: a real sshd on 127.0.0.1 behind tests/helpers/delay_proxy.py (a loopback
TCP proxy adding half the round trip in each direction), and the real `llamaherd` command run as a new process
for each of: fresh `start` (until healthy), adopt-`start`, `status`, `preset set`, `stop`.

Each command runs with LLAMAHERD_TRACE_REMOTE set, so the bench also prints what it asked of the far side: ssh
connections, agent requests, ssh sessions, SFTP operations and forwarded channels (each costs a round trip or
more, plus whatever waits on it). A second pass at a longer round trip checks that a healthy router is not
reported "no answer" by `status`.

Run: python -m bench.remote_rtt [--rtt MS] [--slow-rtt MS] [--rounds N]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from app.services.binary import HOW_TO_GET, find_llama_server
from app.services.remote_trace import TRACE_ENV
from bench.common import tiny_models, workdir
from tests.helpers.delay_proxy import DelayProxy
from tests.helpers.herd import Herd
from tests.helpers.router import preset_text
from tests.sshd import SshdUnavailable, SshServer, start_sshd


def config_for(server: SshServer, proxy_port: int, d: Path, program: str) -> str:
    known = d / "known_hosts_proxy"  # the server's key under the proxy's port
    key = server.host_key_line.split(" ", 1)[1]
    known.write_text(f"[{server.host}]:{proxy_port} {key}\n")
    os.chmod(known, 0o600)
    vals = {
        "name": "far", "host": server.host, "port": proxy_port, "user": server.user,
        "identity_file": server.client_key, "known_hosts": str(known), "router": "bench-rtt",
        "program": program, "preset": str(d / "remote models.ini"),
    }  # fmt: skip
    return "[[machines]]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in vals.items())


def run(h: Herd, trace: Path, *args: str) -> tuple[float, subprocess.CompletedProcess[str], list[str]]:
    trace.unlink(missing_ok=True)
    h.extra_env[TRACE_ENV] = str(trace)
    t0 = time.monotonic()  # the trace's clock too (CLOCK_MONOTONIC is one clock for every process)
    r = h.run(*args, timeout=120)
    t_end = time.monotonic()
    took = t_end - t0
    lines = trace.read_text().splitlines() if trace.exists() else []
    t_first = float(lines[0].split(" ", 1)[0]) if lines else t0
    t_last = float(lines[-1].split(" ", 1)[0]) if lines else t_end
    # each op with when it was asked, in s after the first (the connection)
    ops = [f"{ln.split(' ', 2)[2]}  @{float(ln.split(' ', 1)[0]) - t_first:.2f}" for ln in lines]
    # what the process spent before its first remote op (start-up, imports, config) and after its last was asked
    ops.append(f"(start-up before connecting {t_first - t0:.2f} s; after the last op was asked {t_end - t_last:.2f} s)")
    if r.returncode != 0:
        print(f"  {' '.join(args)} failed ({r.returncode}): {r.stderr.strip()[-400:]}", flush=True)
    return took, r, ops


def kinds(ops: list[str]) -> str:
    c = collections.Counter(op.split(" ", 1)[0] for op in ops if not op.startswith("("))  # by kind
    return ", ".join(f"{k} {n}" for k, n in sorted(c.items()))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rtt", type=float, default=300.0, help="round trip in ms (default 300)")
    ap.add_argument("--slow-rtt", type=float, default=450.0, help="the status check's round trip in ms")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--verbose", action="store_true", help="print every remote operation of each command")
    args = ap.parse_args()
    program = find_llama_server()
    if program is None:
        raise SystemExit(HOW_TO_GET)
    d = workdir()
    models = tiny_models(d)
    (d / "remote models.ini").write_text(preset_text(dict(models)))
    try:
        server = start_sshd(d / "sshd")
    except SshdUnavailable as e:
        print(f"skipped: {e}")
        return
    trace = d / "trace.log"
    times: dict[str, list[float]] = collections.defaultdict(list)
    ops_of: dict[str, str] = {}
    h = Herd(root=d, config=d / "config.toml")
    try:
        with DelayProxy(server.host, server.port, one_way=args.rtt / 2000) as proxy:
            h.write_config(config_for(server, proxy.port, d, program))
            print(f"round trip {args.rtt:g} ms through the delay proxy (python start-up included in each figure)")
            steps = [
                ("fresh start", ("start", "far"), "started in"),
                ("adopt start", ("start", "far"), "adopted"),
                ("status", ("status",), "running pid"),
                ("preset set", ("preset", "set", "far", "alpha", "ctx-size=256"), "wrote"),
                ("stop", ("stop", "far"), "stopped"),
            ]
            for i in range(args.rounds):
                for label, argv, want in steps:
                    if label == "preset set":
                        argv = (*argv[:-1], f"ctx-size={256 + 32 * i}")
                    took, r, ops = run(h, trace, *argv)
                    ok = r.returncode == 0 and want in r.stdout
                    times[label].append(took)
                    ops_of[label] = f"{len(ops) - 1} ops ({kinds(ops)})"
                    print(f"  {label:<12} {took:5.2f} s  {'ok' if ok else 'UNEXPECTED: ' + r.stdout.strip()[:200]}"
                          f"  remote: {ops_of[label]}", flush=True)  # fmt: skip
                    if args.verbose:
                        for op in ops:
                            print(f"      {op}")
            print(f"at {args.rtt:g} ms round trip (median of {args.rounds}):")
            for label, _, _ in steps:
                s = sorted(times[label])
                print(f"  {label:<12} median {s[len(s) // 2]:.2f} s  max {s[-1]:.2f} s  remote: {ops_of[label]}")
            # A healthy router over a slower link: `status` must not call it "no answer".
            h.run("start", "far", timeout=120)
            proxy.one_way = args.slow_rtt / 2000
            took, r, ops = run(h, trace, "status")
            verdict = "running" if "running pid" in r.stdout else "NOT running: " + r.stdout.strip()[:300]
            print(f"at {args.slow_rtt:g} ms round trip: status {took:.2f} s, router {verdict}")
            proxy.one_way = args.rtt / 2000
            h.run("stop", "far", timeout=120)
    finally:
        h.stop_all()
        server.cut_connections()
        server.stop()
    sys.stdout.flush()


if __name__ == "__main__":
    main()
