"""Dashboard actions over a slow link with the connection held: the service layer the dashboard drives (Fleet,
following the machine as the dashboard does) against a real sshd on 127.0.0.1 behind tests/helpers/delay_proxy.py,
and a real llama-server router on the far side (started first with the real `llamaherd start`).

Each action (load, unload, reload, stop) is timed from the call to its return (the router's answer, or for stop
the router gone), and given in round trips of the relay; the remote operations it asked are printed from
LLAMAHERD_TRACE_REMOTE (the followers' own background reads may show among them: they are marked by kind).

Run: python -m bench.remote_actions [--rtt MS] [--rounds N]
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from app.config import load_config
from app.services.core.router_types import RouterState
from app.services.fleet import Fleet
from app.services.ssh.remote_trace import TRACE_ENV
from bench.common import far_side, rtt_parser
from tests.helpers.herd import Herd


def ops_since(trace: Path, t0: float) -> list[str]:
    out = []
    for ln in trace.read_text().splitlines() if trace.exists() else []:
        when, _, rest = ln.partition(" ")
        if float(when) >= t0 - 0.001:  # the trace keeps milliseconds
            out.append(f"{rest.split(' ', 1)[1]}  @{float(when) - t0:.2f}")
    return out


async def actions(h: Herd, trace: Path, rtt: float, rounds: int) -> None:
    fleet = Fleet(load_config(h.config))
    await fleet.start()
    m = fleet.machine("far")
    try:
        deadline = time.monotonic() + 60
        while m.view.router_state is not RouterState.RUNNING or m.client is None:
            if time.monotonic() > deadline:
                raise SystemExit(f"the dashboard's machine never showed the router running: {m.view}")
            await asyncio.sleep(0.1)
        await asyncio.sleep(3)  # the followers' start-up reads are done; the link is idle but for its schedule
        steps: list[tuple[str, Callable[[], Awaitable[object]]]] = [
            ("load", lambda: fleet.load("far", "alpha")),
            ("unload", lambda: fleet.unload("far", "alpha")),
            ("reload", lambda: fleet.reload("far")),
        ]
        for _ in range(rounds):
            for label, step in steps:
                t0 = time.monotonic()
                await step()
                took = time.monotonic() - t0
                ops = ops_since(trace, t0)
                print(f"  {label:<7} {took:5.2f} s = {took / rtt:4.1f} round trips  remote: {'; '.join(ops)}")
                await asyncio.sleep(1.5)
        t0 = time.monotonic()
        await fleet.stop_router("far")
        took = time.monotonic() - t0
        print(f"  {'stop':<7} {took:5.2f} s = {took / rtt:4.1f} round trips (to the router gone)  "
              f"remote: {'; '.join(ops_since(trace, t0))}")  # fmt: skip
    finally:
        await fleet.close()


def main() -> None:
    ap = rtt_parser()
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    far = far_side()
    if far is None:
        return
    h = far.herd
    with far.through_proxy(args.rtt):
        r = h.run("start", "far", timeout=120)
        if r.returncode != 0:
            raise SystemExit(f"start failed: {r.stderr}")
        os.environ["XDG_STATE_HOME"] = str(h.state_home)  # this process's history, not the user's
        os.environ[TRACE_ENV] = str(far.trace)
        print(f"dashboard actions at {args.rtt:g} ms round trip, connection held (Fleet following the machine):")
        asyncio.run(actions(h, far.trace, args.rtt / 1000, args.rounds))


if __name__ == "__main__":
    main()
