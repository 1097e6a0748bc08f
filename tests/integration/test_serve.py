"""`llamaherd serve` against a real router (issue 37): the token in front of every path, and /metrics telling what
the router's own list says."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import psutil
import pytest

from app.services.activity.answering import SILENT_ROUNDS
from app.services.activity.poll import POLL_TIMEOUT
from tests.conftest import RouterFactory
from tests.helpers.herd import Herd
from tests.helpers.router import preset_text
from tests.helpers.serve import Served, start_serve, token_file
from tests.helpers.sshd import SshServer
from tests.helpers.wait import wait_for, wait_for_sync
from tests.integration.test_ask_router import child_of
from tests.integration.test_lifecycle_ssh import ssh_machine, toml_for

UPGRADE = {
    "Connection": "Upgrade",
    "Upgrade": "websocket",
    "Sec-WebSocket-Version": "13",
    "Sec-WebSocket-Key": base64.b64encode(os.urandom(16)).decode(),
}


@pytest.fixture
def served(herd: Herd) -> Iterator[Served]:
    assert herd.run("start", "here").returncode == 0
    s = start_serve(herd, "--max-sessions", "2")
    yield s
    s.stop()


def router_models(herd: Herd) -> dict[str, str]:
    """Each model's status as the router itself lists it (GET /models with its key, no llamaherd in between)."""
    rec = herd.record()
    assert rec is not None
    key = (herd.state_home / "llamaherd" / "routers" / "default" / "api.key").read_text().strip()
    r = httpx.get(f"http://127.0.0.1:{rec['port']}/models", headers={"Authorization": f"Bearer {key}"}, timeout=10)
    return {m["id"]: m["status"]["value"] for m in r.json()["data"]}


def test_without_the_token_every_path_is_401_and_no_session_starts(served: Served) -> None:
    paths = ["/", "/ws", "/metrics", "/static/js/textual.js", "/?fontsize=20", "/download/x"]
    for path in paths:
        for headers in ({}, {"Authorization": "Bearer wrong-token-0123456789"}, {"Cookie": "llamaherd_serve=wrong"}):
            r = httpx.get(served.base + path, headers={**UPGRADE, **headers}, timeout=10, follow_redirects=False)
            assert r.status_code == 401, (path, headers, r.status_code)
            assert "needs its token" in r.text and served.token not in r.text
    r = httpx.get(served.base + "/?token=not-the-token-0123456789", timeout=10, follow_redirects=False)
    assert r.status_code == 401 and "set-cookie" not in r.headers
    assert served.session_pids() == []  # no dashboard was started for anyone without the token


def test_a_first_visit_with_the_token_sets_the_cookie_and_redirects_without_it(served: Served) -> None:
    r = httpx.get(f"{served.base}/?token={served.token}&fontsize=14", timeout=10, follow_redirects=False)
    assert r.status_code == 303
    assert r.headers["location"] == "/?fontsize=14"
    cookie = r.headers["set-cookie"]
    assert cookie.startswith(f"llamaherd_serve={served.token};")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
    page = httpx.get(served.base + "/", cookies={"llamaherd_serve": served.token}, timeout=10)
    assert page.status_code == 200
    assert f"ws://{served.base.removeprefix('http://')}/ws" in page.text  # the websocket, at the address used
    assert served.token not in page.text
    assert "googleapis" not in page.text and "https://" not in page.text  # nothing from a third party
    # a scraper: the bearer header, and nothing else needed
    assert served.metrics().startswith("# HELP llamaherd_")


def test_the_token_is_kept_0600_and_never_in_argv_or_output(herd: Herd, served: Served) -> None:
    path = token_file(herd)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert path.read_text().strip() == served.token
    assert served.token not in " ".join(served.said)
    assert served.token not in Path(f"/proc/{served.proc.pid}/cmdline").read_text()
    again = start_serve(herd)
    try:
        assert again.token == served.token  # kept, not made anew
    finally:
        again.stop()


def test_a_token_from_the_environment_is_used_and_not_passed_on(herd: Herd) -> None:
    token = "env-token-" + "x" * 24
    s = start_serve(herd, env={"LLAMAHERD_SERVE_TOKEN": token})
    try:
        assert "LLAMAHERD_SERVE_TOKEN" in "".join(s.said)  # said where it came from, not what it is
        assert token not in "".join(s.said)
        assert httpx.get(s.base + "/metrics", headers={"Authorization": f"Bearer {token}"}).status_code == 200
        assert not token_file(herd).exists()  # nothing kept: the operator's variable is the token
    finally:
        s.stop()


def test_metrics_say_what_the_router_lists(herd: Herd, served: Served) -> None:
    def sample(name: str, **labels: str) -> float | None:
        return served.sample(name, machine="here", **labels)

    wait_for_sync(lambda: sample("llamaherd_model_status", model="alpha", status="unloaded") == 1, 30,
                  what="alpha listed unloaded", explain=served.metrics)  # fmt: skip
    assert sample("llamaherd_machine_up") == 1 and sample("llamaherd_router_up") == 1
    assert herd.run("load", "here", "alpha").returncode == 0
    wait_for_sync(lambda: sample("llamaherd_model_loaded", model="alpha") == 1, 30, what="alpha loaded in /metrics",
                  explain=served.metrics)  # fmt: skip
    at_router = router_models(herd)
    assert at_router["alpha"] == "loaded"
    for model, status in at_router.items():
        assert sample("llamaherd_model_status", model=model, status=status) == 1, (model, status)
        assert sample("llamaherd_model_loaded", model=model) == (1 if status == "loaded" else 0)
    assert sample("llamaherd_model_requests_processing", model="alpha") == 0
    assert sample("llamaherd_model_failures_total", model="broken") == 0
    # The host's figures come with its stats round, not with the router's list: under load that round can come
    # after the load above (seen once in CI).
    wait_for_sync(lambda: (sample("llamaherd_host_memory_used_bytes") or 0) > 0, 30, what="the host's memory",
                  explain=served.metrics)  # fmt: skip
    # a model that fails to load is counted once, and said failed
    herd.run("load", "here", "broken")  # asked; the router says how it went
    wait_for_sync(lambda: sample("llamaherd_model_failures_total", model="broken") == 1, 30,
                  what="broken's failure counted", explain=served.metrics)  # fmt: skip
    assert sample("llamaherd_model_status", model="broken", status="failed") == 1


async def open_sessions(served: Served, n: int) -> tuple[Any, list[Any]]:
    """n websockets speaking textual-serve's protocol, as browser tabs do, each drawn at least once."""
    http = aiohttp.ClientSession(headers={"Authorization": f"Bearer {served.token}"})
    tabs = []
    for _ in range(n):
        ws = await http.ws_connect(served.base + "/ws?width=120&height=40")
        got = await asyncio.wait_for(ws.receive(), 30)  # the dashboard draws itself
        assert got.type == aiohttp.WSMsgType.BINARY and b"\x1b[" in got.data
        tabs.append(ws)
    return http, tabs


@pytest.mark.parametrize("mode", ["shared", "process"])
def test_sessions_are_bounded(herd: Herd, mode: str) -> None:
    """--max-sessions 2: two tabs run two dashboards (in serve, or a process each), a third is refused with 503."""
    assert herd.run("start", "here").returncode == 0
    s = start_serve(herd, "--max-sessions", "2", "--sessions", mode)

    async def scenario() -> None:
        http, tabs = await open_sessions(s, 2)
        try:
            assert len(s.session_pids()) == (2 if mode == "process" else 0)
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await http.ws_connect(s.base + "/ws")
            assert refused.value.status == 503
            await tabs[0].close()

            # a closed tab frees its place (once its dashboard has left)
            async def accepted() -> bool:
                try:
                    tabs.append(await http.ws_connect(s.base + "/ws"))
                except aiohttp.WSServerHandshakeError as e:
                    assert e.status == 503
                    return False
                return True

            await wait_for(accepted, 30, what="the closed tab's place free again", step=0.2)
            assert (await asyncio.wait_for(tabs[-1].receive(), 30)).type == aiohttp.WSMsgType.BINARY
        finally:
            for t in tabs:
                await t.close()
            await http.close()
        await asyncio.to_thread(wait_for_sync, lambda: s.session_pids() == [], 30, what="sessions ended")

    try:
        asyncio.run(scenario())
    finally:
        assert s.stop() == 0


def test_a_second_tab_opens_no_ssh_connection(tmp_path: Path, tiny_models: dict[str, Path], sshd: SshServer,
                                              llama_server: str) -> None:  # fmt: skip
    """Shared sessions: the serve process holds one ssh connection to a remote machine however many tabs are open."""
    (tmp_path / "remote models.ini").write_text(preset_text(dict(tiny_models)))
    herd = Herd(root=tmp_path, config=tmp_path / "config.toml")
    herd.write_config(toml_for(ssh_machine(sshd, "far", tmp_path, llama_server)))
    s = start_serve(herd)

    def links() -> int:
        procs = [psutil.Process(s.proc.pid), *psutil.Process(s.proc.pid).children(recursive=True)]
        return sum(1 for p in procs for c in p.net_connections("tcp")
                   if c.raddr and c.raddr.port == sshd.port and c.status == psutil.CONN_ESTABLISHED)  # fmt: skip

    async def scenario() -> None:
        await asyncio.to_thread(wait_for_sync, lambda: links() == 1, 30, what="serve's own ssh connection")
        http, tabs = await open_sessions(s, 2)
        try:
            await asyncio.sleep(0)
            assert s.session_pids() == []
            assert links() == 1
        finally:
            for t in tabs:
                await t.close()
            await http.close()

    try:
        asyncio.run(scenario())
        assert s.sample("llamaherd_machine_up", machine="far") == 1
    finally:
        s.stop()
        herd.stop_all()


def test_metrics_only_serves_no_dashboard(herd: Herd) -> None:
    s = start_serve(herd, "--metrics-only")
    try:
        assert "dashboard at" not in "".join(s.said)
        auth = {"Authorization": f"Bearer {s.token}"}
        assert httpx.get(s.base + "/ws", headers={**UPGRADE, **auth}).status_code == 404
        assert "metrics-only" in httpx.get(s.base + "/", headers=auth).text
        assert s.sample("llamaherd_machine_up", machine="here") == 1
        assert httpx.get(s.base + "/metrics").status_code == 401
    finally:
        assert s.stop() == 0


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--host", "0.0.0.0"], "--public"),
        (["--tls-cert", "/nonexistent.pem"], "--tls-key"),
        (["--max-sessions", "0"], "at least 1"),
    ],
)
def test_bad_usage_is_exit_2_and_listens_nowhere(herd: Herd, args: list[str], said: str) -> None:
    r = herd.run("serve", "--port", "0", *args)
    assert r.returncode == 2
    assert said in r.stderr


def test_show_token_prints_the_token_alone(herd: Herd) -> None:
    r = herd.run("serve", "--show-token")
    assert r.returncode == 0
    assert r.stdout == token_file(herd).read_text()
    assert json.dumps(r.stdout)  # one line, nothing else


def self_signed(d: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key (cryptography comes with asyncssh)."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    cert_path, key_path = d / "cert.pem", d / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))  # fmt: skip
    return cert_path, key_path


def test_tls_serves_https_and_the_cookie_is_secure(herd: Herd, tmp_path: Path) -> None:
    import ssl

    cert, key = self_signed(tmp_path)
    s = start_serve(herd, "--tls-cert", str(cert), "--tls-key", str(key))
    s.verify = ssl.create_default_context(cafile=str(cert))
    try:
        assert s.base.startswith("https://127.0.0.1:")
        r = httpx.get(f"{s.base}/?token={s.token}", verify=s.verify, follow_redirects=False, timeout=10)
        assert r.status_code == 303 and "Secure" in r.headers["set-cookie"]
        page = httpx.get(s.base + "/", cookies={"llamaherd_serve": s.token}, verify=s.verify, timeout=10)
        assert f"wss://{s.base.removeprefix('https://')}/ws" in page.text
        assert s.sample("llamaherd_machine_up", machine="here") == 1
        assert httpx.get(s.base + "/metrics", verify=s.verify, timeout=10).status_code == 401
        with pytest.raises(httpx.HTTPError):  # plain HTTP on the TLS port gets nothing
            httpx.get(s.base.replace("https://", "http://") + "/metrics", timeout=5).raise_for_status()
    finally:
        s.stop()


def test_a_public_host_without_tls_is_warned_about(herd: Herd) -> None:
    """192.0.2.1 (TEST-NET-1) is no address of this machine: the warning comes first, then the bind fails; no
    port is opened beyond loopback and nothing is sent anywhere."""
    r = herd.run("serve", "--host", "192.0.2.1", "--public", "--port", "0")
    assert "plain HTTP" in r.stderr and "--tls-cert" in r.stderr
    assert r.returncode == 1 and "cannot listen on 192.0.2.1" in r.stderr


@pytest.mark.timing
def test_a_wedged_model_is_not_answering_and_a_scrape_does_not_wait_for_it(
    tmp_path: Path, make_router: RouterFactory
) -> None:
    """SIGSTOP on a loaded model's own server: the activity poll flags it and /metrics says so; a scrape meanwhile
    answers at once, since it asks no router anything."""
    router = make_router()
    herd = Herd(root=tmp_path, config=tmp_path / "config.toml")
    herd.write_config(f'[[machines]]\nname = "box"\nurl = "{router.url}"\n')
    httpx.post(router.url + "/models/load", json={"model": "alpha"}, timeout=30)
    router.wait_model("alpha", {"loaded"})
    s = start_serve(herd, "--metrics-only")
    try:
        wait_for_sync(lambda: s.sample("llamaherd_model_not_answering", machine="box", model="alpha") == 0, 30,
                      what="alpha loaded and answering in /metrics", explain=s.metrics)  # fmt: skip
        pid = child_of(router, "alpha")
        os.kill(pid, signal.SIGSTOP)
        try:
            wait_for_sync(lambda: s.sample("llamaherd_model_not_answering", machine="box", model="alpha") == 1,
                          SILENT_ROUNDS * (POLL_TIMEOUT + 1) + 15, step=0.5, what="alpha said not answering",
                          explain=s.metrics)  # fmt: skip
            t0 = time.monotonic()
            assert s.sample("llamaherd_model_loaded", machine="box", model="alpha") == 1
            assert time.monotonic() - t0 < 2  # the router's child is frozen; the scrape is not
        finally:
            os.kill(pid, signal.SIGCONT)
        wait_for_sync(lambda: s.sample("llamaherd_model_not_answering", machine="box", model="alpha") == 0,
                      POLL_TIMEOUT + 15, step=0.5, what="alpha answering again", explain=s.metrics)  # fmt: skip
    finally:
        s.stop()


def test_serve_stops_on_sigterm_with_a_tab_open(herd: Herd) -> None:
    """systemd's stop while a browser tab is open: its dashboard is told to quit, and serve exits 0."""
    assert herd.run("start", "here").returncode == 0
    s = start_serve(herd)

    async def scenario() -> None:
        http, tabs = await open_sessions(s, 1)
        try:
            s.proc.send_signal(signal.SIGTERM)
            await asyncio.to_thread(s.proc.wait, 20)
            assert s.proc.returncode == 0
            assert (await asyncio.wait_for(tabs[0].receive(), 10)).type in (
                aiohttp.WSMsgType.CLOSE,
                aiohttp.WSMsgType.CLOSED,
                aiohttp.WSMsgType.BINARY,
            )
        finally:
            for t in tabs:
                await t.close()
            await http.close()

    try:
        asyncio.run(scenario())
    finally:
        s.stop()
