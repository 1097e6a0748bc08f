"""Router lifecycle over a real ssh connection (OpenSSH sshd on 127.0.0.1), with and without SFTP."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from app.config import MachineConfig
from app.services.core.errors import HostKeyError
from app.services.core.fleet_events import FleetEvent
from app.services.core.router_types import ModelState, RouterState
from app.services.machine.machine import Machine
from app.services.ssh.transport import SshTransport
from tests.helpers.herd import Herd
from tests.helpers.router import preset_text
from tests.helpers.sshd import SshServer
from tests.helpers.wait import wait_for


def ssh_machine(server: SshServer, name: str, tmp_path: Path, llama_server: str, **extra: object) -> MachineConfig:
    return MachineConfig(
        name=name, host=server.host, port=server.port, user=server.user, identity_file=server.client_key,
        known_hosts=server.known_hosts, router=f"t-{tmp_path.name}", program=llama_server,
        preset=str(tmp_path / "remote models.ini"), **extra,  # type: ignore[arg-type]
    )  # fmt: skip


def toml_for(m: MachineConfig) -> str:
    import json

    keys = ("name", "host", "port", "user", "identity_file", "known_hosts", "router", "program", "preset")
    return "[[machines]]\n" + "".join(f"{k} = {json.dumps(getattr(m, k))}\n" for k in keys)


@pytest.fixture
def remote(tmp_path: Path, tiny_models: dict[str, Path], any_sshd: SshServer, llama_server: str) -> Iterator[Herd]:
    # The preset path has a space on purpose: it must reach the far side literally.
    (tmp_path / "remote models.ini").write_text(preset_text(dict(tiny_models)))
    h = Herd(root=tmp_path, config=tmp_path / "config.toml")
    h.machine = ssh_machine(any_sshd, "far", tmp_path, llama_server)  # type: ignore[attr-defined]
    h.write_config(toml_for(h.machine))  # type: ignore[attr-defined]
    yield h
    h.stop_all()


def test_start_over_ssh_tunnel_load_unload_and_adopt(remote: Herd, any_sshd: SshServer) -> None:
    r = remote.run("start", "far")
    assert r.returncode == 0, r.stderr
    pid = int(r.stdout.split("pid ")[1].split(",")[0])
    proc = psutil.Process(pid)
    # the port remembered, so that the next status opens its channels to the router at once (cli/port_memo.py)
    port = int(r.stdout.split("port ")[1].split(" ")[0])
    assert list(json.loads((remote.state_home / "llamaherd" / "router_ports.json").read_text()).values()) == [port]
    listening = {c.laddr for c in proc.net_connections(kind="tcp") if c.status == psutil.CONN_LISTEN}
    assert listening and all(a.ip == "127.0.0.1" for a in listening)
    assert "remote models.ini" in " ".join(proc.cmdline())
    # detached: a session of its own (no hangup from the ssh session reaches it), and its parent is not sshd
    assert os.getsid(pid) == pid
    assert proc.ppid() == 1 or psutil.Process(proc.ppid()).name() != "sshd"
    r = remote.run("load", "far", "alpha", "--wait")
    assert r.returncode == 0 and "alpha: loaded" in r.stdout, r.stderr
    r = remote.run("unload", "far", "alpha")
    assert r.returncode == 0
    # a second llamaherd process adopts it; the cut of every ssh connection does not touch it
    any_sshd.cut_connections()
    r = remote.run("start", "far")
    assert r.returncode == 0 and "adopted" in r.stdout and f"pid {pid}" in r.stdout
    assert proc.is_running()
    st = remote.run("status", "--json")
    assert '"router": "running"' in st.stdout and f'"pid": {pid}' in st.stdout
    r = remote.run("stop", "far")
    assert "stopped on request" in r.stdout
    assert not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE


def test_two_concurrent_starts_over_ssh_give_one_router(remote: Herd) -> None:
    procs = [remote.popen("start", "far") for _ in range(2)]
    outs = [p.communicate(timeout=60) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert sorted("adopted" in o for o, _ in outs) == [False, True]
    assert len(remote.router_pids()) == 1


@pytest.mark.timing
async def test_follower_survives_a_cut_link_and_reports_kill_9(remote: Herd, any_sshd: SshServer) -> None:
    events: list[FleetEvent] = []
    m = Machine(remote.machine, events.append)  # type: ignore[attr-defined]
    assert m.manager is not None
    await m.transport.connect()
    rec, started = await m.manager.start()
    assert started
    m.start()
    try:
        await wait_for(lambda: m.view.router_state is RouterState.RUNNING and m.view.stream == "sse", 15)
        url_before = m.view.url
        link = m.transport
        assert isinstance(link, SshTransport)
        connects = link.connects
        assert any_sshd.cut_connections() > 0
        # the tunnel comes back by itself, on the same local port, and the router is still the same
        await wait_for(lambda: link.connects > connects, 20, what="a new ssh connection after the cut")

        async def loaded() -> bool:
            try:
                await m.require_client().load("alpha")
            except Exception:
                return False
            return True

        await wait_for(loaded, 20, step=0.2, what="load over the new tunnel")
        await wait_for(lambda: "alpha" in m.models and m.models["alpha"].state is ModelState.LOADED, 20)
        assert m.view.url == url_before and m.view.pid == rec.pid

        # the log follower came back after the cut without showing any line twice, and with the new ones
        def caught_up() -> bool:
            file_lines = Path(rec.log).read_text().splitlines()
            got = [ln.raw for ln in m.logs]
            return bool(got) and got == file_lines[-len(got) :] and any("alpha" in g for g in got[-20:])

        await wait_for(caught_up, 10, step=0.1, what="the log follower caught up")
        t0 = time.monotonic()
        psutil.Process(rec.pid).kill()
        await wait_for(lambda: m.view.router_state is RouterState.EXITED, 10, step=0.02)
        took = time.monotonic() - t0
        assert took < 2.0, took
        assert "exited without being asked" in m.view.router_reason and m.view.log_tail
    finally:
        await m.close()


async def test_unknown_host_key_refused_then_accepted(tmp_path: Path, sshd: SshServer, llama_server: str) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    cfg = ssh_machine(sshd, "far", tmp_path, llama_server)
    import dataclasses

    m = Machine(dataclasses.replace(cfg, known_hosts=str(empty)), lambda ev: None)
    with pytest.raises(HostKeyError) as e:
        await m.transport.connect()
    assert "127.0.0.1" in str(e.value) and "accept_new_host_key" in str(e.value)
    await m.close()
    m = Machine(dataclasses.replace(cfg, known_hosts=str(empty), accept_new_host_key=True), lambda ev: None)
    await m.transport.connect()
    await m.close()
    assert sshd.host_key_line.split()[-1] in empty.read_text()
