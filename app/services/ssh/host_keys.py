"""The ssh host-key policy: known_hosts is read and appended to by us, never handed to asyncssh as a path.

A key known_hosts does not hold is accepted only when the machine says `accept_new_host_key`; a key that
differs from the one it holds is never accepted. Both refusals say how to fix them.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import asyncssh

from app.services.ssh.asyncssh_auth import pipeline_auth, skip_none_probe

Problem = Literal["changed", "unknown"]


def describe(exc: BaseException) -> str:
    text = str(exc).strip()
    if isinstance(exc, TimeoutError) and not text:
        return "timed out"
    return text or type(exc).__name__


@dataclass(frozen=True)
class SeenKey:
    """A host key as the server offered it, and where."""

    host: str
    port: int
    key: asyncssh.SSHKey


class SshClient(asyncssh.SSHClient):
    """Host-key policy, link-loss notice and the auth order (ssh/asyncssh_auth.py) for one connection attempt."""

    def __init__(
        self,
        known: asyncssh.SSHKnownHosts,
        accept_new: bool,
        on_lost: Callable[[SshClient, Exception | None], None],
    ) -> None:
        self._known = known
        self._accept_new = accept_new
        self._on_lost = on_lost
        self.problem: tuple[Problem, SeenKey] | None = None
        self.accepted: SeenKey | None = None
        self._conn: asyncssh.SSHClientConnection | None = None

    def connection_made(self, conn: asyncssh.SSHClientConnection) -> None:
        self._conn = conn
        pipeline_auth(conn)

    def begin_auth(self, username: str) -> None:
        if self._conn is not None:
            skip_none_probe(self._conn)

    def validate_host_public_key(self, host: str, addr: str, port: int, key: asyncssh.SSHKey) -> bool:
        # Only called for a key known_hosts does not already trust. If known_hosts holds any key for this
        # host it CHANGED, which is never accepted, whatever accept_new_host_key says.
        found = self._known.match(host, addr, port if port != 22 else None)
        if found[0] or found[1]:
            self.problem = ("changed", SeenKey(host, port, key))
            return False
        if self._accept_new:
            self.accepted = SeenKey(host, port, key)
            return True
        self.problem = ("unknown", SeenKey(host, port, key))
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._on_lost(self, exc)


def load_known_hosts(path: str) -> asyncssh.SSHKnownHosts:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except FileNotFoundError:
        text = ""
    # An object, not the path: asyncssh treats an empty argument as "use ~/.ssh/known_hosts".
    return asyncssh.import_known_hosts(text)


def host_key_algs(
    known: asyncssh.SSHKnownHosts, host: str, port: int | None, ssh_config: str | None
) -> list[str] | None:
    """Host key algorithms to offer: those of the keys known_hosts holds for this host first, then every
    other one, as OpenSSH does. asyncssh alone offers only the known types, so a server that now has a
    key of another type would hang up mid-handshake ("connection reset") instead of being reported as a
    CHANGED key."""
    resolved = asyncssh.SSHClientConnectionOptions(
        host=host,
        port=port if port is not None else (),
        config=[ssh_config] if ssh_config else [],
        client_keys=None,
        agent_path=None,
    )
    alias = resolved.host_key_alias or resolved.host
    real_port = int(resolved.port)
    found = known.match(alias, "", real_port if real_port != 22 else None)
    first: list[bytes] = [alg for key in found[0] for alg in key.sig_algorithms]
    if not first:
        return None  # nothing known: asyncssh's defaults, and validate_host_public_key decides
    rest = [a for a in asyncssh.public_key.get_default_public_key_algs() if a not in first]
    return [a.decode("ascii") for a in dict.fromkeys(first + rest)]


def _pattern(host: str, port: int) -> str:
    return host if port == 22 else f"[{host}]:{port}"


def record_host_key(known_hosts: str, seen: SeenKey) -> None:
    alg_b64 = " ".join(seen.key.export_public_key("openssh").decode().split()[:2])
    parent = os.path.dirname(known_hosts)
    if parent:
        os.makedirs(parent, mode=0o700, exist_ok=True)
    fd = os.open(known_hosts, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as f:
        f.write(f"{_pattern(seen.host, seen.port)} {alg_b64}\n")


def refusal_message(name: str, host: str, known_hosts: str, client: SshClient | None, exc: Exception) -> str:
    """What to tell an operator when the host key was refused: what changed or is unknown, and the fix."""
    if client is None or client.problem is None:
        return f"{name}: the ssh host key of {host} was refused: {describe(exc)}"
    kind, seen = client.problem
    where = seen.host if seen.port == 22 else f"{seen.host} port {seen.port}"
    what = f"{seen.key.get_algorithm()} {seen.key.get_fingerprint()}"
    keyscan = f"ssh-keyscan -p {seen.port} {shlex.quote(seen.host)} >> {shlex.quote(known_hosts)}"
    if kind == "changed":
        pattern = _pattern(seen.host, seen.port)
        return (
            f"WARNING: {name}: the ssh host key of {where} has CHANGED (it is now {what}; "
            f"{known_hosts} holds a different one). Somebody may be intercepting the connection, "
            "or the machine was reinstalled. Refusing to connect. If the change is expected, remove the "
            f"old key with `ssh-keygen -f {shlex.quote(known_hosts)} -R {shlex.quote(pattern)}` "
            f"and accept the new one with `{keyscan}`."
        )
    return (
        f"{name}: the ssh host key of {where} is not known ({what}); refusing to connect. "
        f"If this is the right machine, accept it with `{keyscan}`, or set "
        f"`accept_new_host_key = true` for machine '{name}' in config.toml."
    )
