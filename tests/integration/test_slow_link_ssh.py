"""Over a real slow link (the fixture sshd behind tests/helpers/delay_proxy.py): the agent measures the link's
round trip, router time bounds grow with it, and the environment and a small write cost no extra session."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from app.services.router.client import LINK_ROUND_TRIPS, RouterClient
from app.services.ssh.transport import SshTransport
from tests.helpers.delay_proxy import DelayProxy
from tests.helpers.sshd import SshServer

pytestmark = pytest.mark.ssh

ONE_WAY = 0.1  # a 200 ms round trip


@pytest.fixture
async def slow(sshd: SshServer, tmp_path: Path) -> AsyncIterator[tuple[SshTransport, DelayProxy]]:
    with DelayProxy(sshd.host, sshd.port, one_way=ONE_WAY) as proxy:
        known = tmp_path / "known_hosts"  # the server's key under the proxy's port
        known.write_text(f"[{sshd.host}]:{proxy.port} {sshd.host_key_line.split(' ', 1)[1]}\n")
        t = SshTransport(
            "slow", sshd.host, port=proxy.port, user=sshd.user, identity_file=sshd.client_key,
            known_hosts=str(known), ssh_config=os.devnull, connect_timeout=15,
        )  # fmt: skip
        try:
            await t.connect()
            yield t, proxy
        finally:
            await t.close()


async def test_the_measured_round_trip_widens_router_bounds(slow: tuple[SshTransport, DelayProxy]) -> None:
    t, proxy = slow
    assert t.round_trip() == 0.0  # nothing measured yet
    for _ in range(3):
        assert (await t.run(["true"])).ok
    rtt = t.round_trip()
    assert rtt >= 2 * ONE_WAY * 0.95, rtt  # the proxy's delay, both ways
    client = RouterClient("http://127.0.0.1:9", timeout=2.0, round_trip=t.round_trip)
    try:
        assert client.bound(2.0) == pytest.approx(2.0 + LINK_ROUND_TRIPS * rtt, abs=0.01)
        assert client.bound(2.0) >= 2.0 + LINK_ROUND_TRIPS * 2 * ONE_WAY * 0.95
    finally:
        await client.aclose()
    assert proxy.connections == 1  # everything rode the one connection


async def test_environment_and_small_writes_go_through_the_agent(
    slow: tuple[SshTransport, DelayProxy], sshd: SshServer, tmp_path: Path
) -> None:
    t, _ = slow
    home = await t.expand("~")
    assert home and home.startswith("/")
    agent = t.agent.agent
    assert agent is not None and agent.requests == 0  # $HOME came unasked with the agent's start
    path = tmp_path / "sub" / "small.txt"
    await t.write_file_atomic(str(path), b"hello\n", mode=0o640)
    assert path.read_bytes() == b"hello\n" and (path.stat().st_mode & 0o777) == 0o640
    assert agent.requests == 1 and t.has_sftp is None  # one agent request; SFTP never started
