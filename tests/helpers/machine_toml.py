"""Config for the machines fault tests use: this machine, or the test sshd (optionally as another user)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.herd import local_config
from tests.helpers.sshd import SshServer


def ssh_toml(server: SshServer, name: str, preset: Path, program: str, user: str | None = None) -> str:
    fields = {
        "name": name, "host": server.host, "port": server.port, "user": user or server.user,
        "identity_file": server.client_key, "known_hosts": server.known_hosts, "router": f"f-{preset.parent.name}",
        "program": program, "preset": str(preset),
    }  # fmt: skip
    return "[[machines]]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in fields.items())


def machine_toml(kind: str, preset: Path, program: str, servers: dict[str, SshServer], user: str | None = None) -> str:
    """`kind` is local, sftp or nosftp (ssh without the SFTP subsystem: the base64 path)."""
    if kind == "local":
        return local_config("m", preset, program=program)
    return ssh_toml(servers[kind], "m", preset, program, user)
