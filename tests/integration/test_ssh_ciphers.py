"""The ciphers a machine's ssh connection offers (app/services/ssh/ciphers.py), against the real sshd: AES-GCM is
what is agreed, unless the machine's ssh_config names its own Ciphers, which are then what is agreed."""

from __future__ import annotations

from pathlib import Path

from app.services.ssh.ciphers import FIRST, cipher_order
from tests.helpers.sshd import SshServer, ssh_transport


async def agreed(sshd: SshServer, **kw: object) -> str:
    """The cipher a connection to the real sshd agreed on (the same both ways), once a command ran over it."""
    t = ssh_transport(sshd, **kw)
    try:
        conn = await t.ensure_connected()
        assert (await t.run(["echo", "ok"])).stdout == b"ok\n"
        sent, received = conn.get_extra_info("send_cipher"), conn.get_extra_info("recv_cipher")
        assert sent == received
        return str(sent)
    finally:
        await t.close()


async def test_aes_gcm_is_agreed_with_openssh(sshd: SshServer) -> None:
    assert await agreed(sshd) == FIRST[0]


async def test_a_ciphers_line_in_the_ssh_config_is_the_operators_choice(sshd: SshServer, tmp_path: Path) -> None:
    config = tmp_path / "ssh_config"
    config.write_text("Host *\n  Ciphers chacha20-poly1305@openssh.com\n")
    assert await agreed(sshd, ssh_config=str(config)) == "chacha20-poly1305@openssh.com"


def test_the_order_offered(tmp_path: Path) -> None:
    order = cipher_order(None)
    assert order is not None and order[:2] == list(FIRST)
    assert "chacha20-poly1305@openssh.com" in order and len(order) == len(set(order))  # the rest kept, once each
    plain = tmp_path / "plain"
    plain.write_text("Host far\n  User op\n")
    assert cipher_order(str(plain)) == order
    for line in ("Ciphers aes256-ctr", "  ciphers=aes256-ctr", "Include ~/.ssh/more"):
        chooses = tmp_path / "chooses"
        chooses.write_text(f"Host far\n{line}\n")
        assert cipher_order(str(chooses)) is None, line
    assert cipher_order(str(tmp_path / "missing")) is None  # asyncssh reports an unreadable config itself
