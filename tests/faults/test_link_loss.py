"""A real sshd behind a link that silently drops every packet (a network namespace the test makes and removes):
the machine shows "unreachable" within 10 s, by ssh keepalives alone, and comes back by itself.

Before the keepalive settings were tightened (15 s x 3) this took 61 s, with the last figures shown as live.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from app.config import MachineConfig
from app.services.core.fleet_events import FleetEvent, HostStatsChanged
from app.services.core.host_types import Connection
from app.services.machine.machine import Machine
from tests.helpers.needs import missing
from tests.helpers.netns import Link, NetnsUnavailable, link
from tests.helpers.sshd import SshdUnavailable, SshServer, start_sshd
from tests.helpers.wait import wait_for

UNREACHABLE_WITHIN = 10.0


def _unavailable(reason: str) -> None:
    missing(reason)


@pytest.fixture
def far(tmp_path: Path, needs_root: None) -> Iterator[tuple[Link, SshServer]]:
    """An sshd inside a fresh network namespace, reached over a veth pair."""
    try:
        with link() as ln:
            try:
                server = start_sshd(tmp_path / "sshd", listen=ln.ns_ip, prefix=ln.prefix)
            except SshdUnavailable as e:
                _unavailable(str(e))
            try:
                yield ln, server
            finally:
                server.cut_connections()  # its sessions (a remote tail) would outlive the listener
                server.stop()
                ln.restore()
    except NetnsUnavailable as e:
        _unavailable(f"cannot make a network namespace here: {e}")


def _connection(m: Machine) -> Connection:
    return m.view.connection  # read afresh: mypy would keep the narrowing of an earlier assert


@pytest.mark.timing
@pytest.mark.ssh
async def test_silent_link_loss_is_unreachable_within_10_s(far: tuple[Link, SshServer], tmp_path: Path) -> None:
    ln, server = far
    events: list[FleetEvent] = []
    cfg = MachineConfig(
        name="far", host=server.host, port=server.port, user=server.user, identity_file=server.client_key,
        known_hosts=server.known_hosts, router=f"t-{tmp_path.name}",
    )  # fmt: skip
    m = Machine(cfg, events.append)
    m.start()
    try:
        await wait_for(lambda: any(isinstance(e, HostStatsChanged) for e in events), 30)
        assert m.view.connection is Connection.CONNECTED

        ln.blackhole()
        lost_at = len(events)
        took = await wait_for(lambda: _connection(m) is Connection.UNREACHABLE, 30)
        print(f"silent link loss -> unreachable: {took:.1f} s ({m.view.connection_reason})")
        assert took <= UNREACHABLE_WITHIN, f"unreachable only after {took:.1f} s"
        # Nothing new came over the dead link: what the pane has is the last figures, shown as stale.
        assert not any(isinstance(e, HostStatsChanged) for e in events[lost_at + 1 :])

        ln.restore()
        back = await wait_for(lambda: m.view.connection is Connection.CONNECTED, 40)
        print(f"link back -> connected: {back:.1f} s")
        n = len(events)
        await wait_for(lambda: any(isinstance(e, HostStatsChanged) for e in events[n:]), 15)
    finally:
        await m.close()
