"""Time to "unreachable" after a silent link loss: a real sshd in a network namespace behind a veth pair,
blackholed with tc tbf (every packet dropped both ways, no RST), while a Machine follows it as the dashboard does.

Skips with the reason where network namespaces cannot be made (needs root). `--every S --misses N` try other
ssh keepalive settings (the old ones were 15 s x 3).

Run: python -m bench.link_loss [--trials N] [--every S] [--misses N]
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable

from app.config import MachineConfig
from app.services.core.fleet_events import FleetEvent, HostStatsChanged
from app.services.core.host_types import Connection
from app.services.machine.machine import Machine
from app.services.ssh import connection as ssh_connection
from app.services.ssh.transport import SshTransport
from bench.common import workdir
from tests.helpers.netns import Link, NetnsUnavailable, link
from tests.helpers.sshd import SshdUnavailable, SshServer, start_sshd
from tests.helpers.wait import wait_for


def _stats_after(events: list[FleetEvent], k: int) -> Callable[[], bool]:
    return lambda: any(isinstance(e, HostStatsChanged) for e in events[k:])


async def trials(ln: Link, server: SshServer, n: int, every: float) -> list[tuple[float, float]]:
    events: list[FleetEvent] = []
    cfg = MachineConfig(
        name="far", host=server.host, port=server.port, user=server.user, identity_file=server.client_key,
        known_hosts=server.known_hosts, router="bench-link-loss",
    )  # fmt: skip
    t = SshTransport(
        "far", server.host, user=server.user, port=server.port, identity_file=server.client_key,
        known_hosts=server.known_hosts, keepalive_interval=every,
    )  # fmt: skip
    m = Machine(cfg, events.append, transport=t)
    m.start()
    out = []
    try:
        for _ in range(n):
            await wait_for(_stats_after(events, len(events)), 60, step=0.02)
            await asyncio.sleep(1.0)
            last_stats = max(i for i, e in enumerate(events) if isinstance(e, HostStatsChanged))
            ln.blackhole()
            took = await wait_for(lambda: m.view.connection is Connection.UNREACHABLE, 180, step=0.02)
            why = m.view.connection_reason
            assert not any(isinstance(e, HostStatsChanged) for e in events[last_stats + 2 :])
            ln.restore()
            back = await wait_for(lambda: m.view.connection is Connection.CONNECTED, 60, step=0.02)
            out.append((took, back))
            print(f"  unreachable after {took:.1f} s ({why}); connected again {back:.1f} s "
                  f"after the link came back", flush=True)  # fmt: skip
    finally:
        await m.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--every", type=float, default=ssh_connection.KEEPALIVE_EVERY)
    ap.add_argument("--misses", type=int, default=ssh_connection.KEEPALIVE_MISSES)
    args = ap.parse_args()
    ssh_connection.KEEPALIVE_MISSES = args.misses
    print(f"ssh keepalive every {args.every:g} s, link lost after {args.misses} unanswered "
          f"(worst case {(args.misses + 1) * args.every:g} s after the last packet)")  # fmt: skip
    try:
        with link() as ln:
            try:
                server = start_sshd(workdir() / "sshd", listen=ln.ns_ip, prefix=ln.prefix)
            except SshdUnavailable as e:
                print(f"skipped: {e}")
                return
            try:
                res = asyncio.run(trials(ln, server, args.trials, args.every))
            finally:
                server.cut_connections()  # its sessions (a remote tail) would outlive the listener
                server.stop()
                ln.restore()
    except NetnsUnavailable as e:
        print(f"skipped: cannot make a network namespace here: {e}")
        return
    took = sorted(r[0] for r in res)
    print(f"silent link loss -> unreachable: min {took[0]:.1f} s, median {took[len(took) // 2]:.1f} s, "
          f"max {took[-1]:.1f} s over {len(took)} trials")  # fmt: skip


if __name__ == "__main__":
    main()
