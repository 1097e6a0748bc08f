"""Headless commands over a slow link: a real sshd on 127.0.0.1 behind tests/helpers/delay_proxy.py (a loopback
TCP proxy adding half the round trip in each direction), and the real `llamaherd` command run as a new process
for each of: fresh `start` (until healthy), adopt-`start`, `status` (twice: the second knows the router's port from
the first), `preset set`, `stop`.

Each command runs with LLAMAHERD_TRACE_REMOTE set, so the bench also prints what it asked of the far side: ssh
connections, agent requests, ssh sessions, SFTP operations and forwarded channels (each costs a round trip or
more, plus whatever waits on it). A second pass at a longer round trip checks that a healthy router is not
reported "no answer" by `status`.

Run: python -m bench.remote_rtt [--rtt MS] [--slow-rtt MS] [--rounds N]
"""

from __future__ import annotations

import collections
import subprocess
import sys
import time
from pathlib import Path

from app.services.ssh.remote_trace import TRACE_ENV
from bench.common import far_side, rtt_parser
from tests.helpers.herd import Herd


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
    ap = rtt_parser()
    ap.add_argument("--slow-rtt", type=float, default=450.0, help="the status check's round trip in ms")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--verbose", action="store_true", help="print every remote operation of each command")
    args = ap.parse_args()
    far = far_side()
    if far is None:
        return
    h, trace = far.herd, far.trace
    times: dict[str, list[float]] = collections.defaultdict(list)
    ops_of: dict[str, str] = {}
    with far.through_proxy(args.rtt) as proxy:
        print(f"round trip {args.rtt:g} ms through the delay proxy (python start-up included in each figure)")
        steps = [
            ("fresh start", ("start", "far"), "started in"),
            ("adopt start", ("start", "far"), "adopted"),
            ("status", ("status",), "running pid"),
            # the router's port as the last status found it (cli/port_memo.py): its channels open a round trip sooner
            ("status again", ("status",), "running pid"),
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
    sys.stdout.flush()


if __name__ == "__main__":
    main()
