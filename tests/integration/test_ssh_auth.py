"""Public-key auth sent signed at once (app/services/ssh/asyncssh_auth.py), against the real sshd. No mocks. These
fail when an upgrade of asyncssh makes any part of it a no-op (the signed request, its pipelining behind the service
request, the "none" probe skipped)."""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path

import asyncssh
import pytest

from app.services.core.errors import TransportError
from app.services.ssh import asyncssh_auth
from tests.helpers.sshd import SshServer, ssh_transport
from tests.helpers.wait import wait_for

pytestmark = pytest.mark.ssh


def test_the_installed_asyncssh_takes_the_signed_first_method() -> None:
    # With an asyncssh whose internals changed, install() declines and every connection pays the query again:
    # this says so instead of the slow link's figures quietly growing back.
    assert asyncssh_auth.install()


async def test_the_key_is_signed_at_once_without_asking_first(
    sshd: SshServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="asyncssh")
    asyncssh.set_debug_level(3)  # every packet sent is logged: the auth requests are counted
    t = ssh_transport(sshd)
    try:
        conn = await t.ensure_connected()
        # One auth request in all: neither the "none" probe before it nor the query without signature
        sent = [r.getMessage() for r in caplog.records if "Sent MSG_USERAUTH_REQUEST" in r.getMessage()]
        assert len(sent) == 1, sent
        port = conn.get_extra_info("sockname")[1]
        mine = f"from 127.0.0.1 port {port} "
        await wait_for(lambda: any("Accepted publickey" in ln and mine in ln for ln in sshd.log_text().splitlines()))
        lines = [ln for ln in sshd.log_text().splitlines() if mine in ln]
        # "Postponed publickey" is the server's answer to a query (a key offered without signature).
        assert not [ln for ln in lines if "Postponed" in ln], lines
        # ...and was sent behind the service request: the accept that came after it was taken as already done
        assert "_packet_handlers" in vars(conn) and getattr(conn, "_next_service", "?") is None
        assert (await t.run(["echo", "ok"])).stdout == b"ok\n"
    finally:
        asyncssh.set_debug_level(1)  # asyncssh's default
        await t.close()


async def test_a_refused_key_still_fails_as_a_refusal(sshd: SshServer, tmp_path: Path) -> None:
    other = tmp_path / "not_authorized"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    t = ssh_transport(sshd, identity_file=str(other), agent=False)
    try:
        with pytest.raises(TransportError) as ei:
            await t.connect()
        assert "denied" in str(ei.value).lower()
    finally:
        await t.close()


async def test_an_rsa_key_signs_with_the_algorithm_the_server_named(sshd: SshServer, tmp_path: Path) -> None:
    # The signed request goes right behind the service request: the server's list of signature algorithms
    # (ext-info, after the key exchange) must still be known when it is signed, or an RSA key would sign with
    # SHA-1, which OpenSSH refuses.
    key = tmp_path / "rsa_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "rsa", "-b", "2048", "-N", "", "-f", str(key)], check=True)
    authorized = sshd.workdir / "authorized_keys"
    before = authorized.read_text()
    authorized.write_text(before + Path(f"{key}.pub").read_text())
    t = ssh_transport(sshd, identity_file=str(key), agent=False)
    try:
        await t.connect()
        assert (await t.run(["echo", "ok"])).stdout == b"ok\n"
    finally:
        await t.close()
        authorized.write_text(before)
