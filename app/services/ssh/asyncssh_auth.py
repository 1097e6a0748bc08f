"""Public-key authentication in one round trip instead of four.

asyncssh (like OpenSSH's client) first sends a "none" request to learn the server's methods, then asks whether a
key would be accepted (a query without signature) and only then sends the signed request: three round trips,
0.9 s of every headless command's set-up over a 300 ms link. RFC 4252 lets a client send the signed request
straight away (section 7) and try any method without asking first (section 5.2), so for a key held in a local
file we do: the "none" probe is skipped (publickey is tried first) and the key is signed at once. And the
auth request is sent right behind the request for the auth service instead of after the server's accept
(`pipeline_auth`): a server handles its packets in order, so the request reaches it once the service is on
(OpenSSH's sshd installs its userauth handler while handling the service request).

Keys from an ssh-agent (or a token) are still asked about first: signing one can prompt the user (ssh-add -c) or
touch a device, which must not happen for a key the server would refuse.

These are asyncssh internals (checked in `install`: with another asyncssh whose internals differ nothing is
changed and the usual three round trips are paid). A refused key, or a server wanting another method, goes on as
before: the server's failure answer lists the methods left, and asyncssh continues with those.

Written against asyncssh==2.24.1, pinned in pyproject.toml. The private names: in `asyncssh.auth`,
`_client_auth_handlers` and `_ClientPublicKeyAuth` (its `_start`, `_send_signed_request`, `_conn`, `_keypair`); on
the client connection, `_packet_handlers`, `_auth_in_progress`, `_owner`, `_username`, `_next_service` and
`_auth_methods`. tests/integration/test_ssh_auth.py fails when an upgrade makes any of the three a no-op. No upstream
issue found (searched asyncssh's issues for a publickey request signed without the query first, for skipping the
"none" request, and for authentication's round trips).
"""

from __future__ import annotations

from typing import Any

import asyncssh
from asyncssh import auth as _auth
from asyncssh import public_key as _public_key
from asyncssh.packet import Boolean, String

_PUBLICKEY = b"publickey"
_Base: Any = getattr(_auth, "_ClientPublicKeyAuth", None)


def _usable() -> bool:
    handlers = getattr(_auth, "_client_auth_handlers", None)
    return (
        isinstance(handlers, dict)
        and _Base is not None
        and all(hasattr(_Base, n) for n in ("_start", "_send_signed_request", "send_request"))
        and hasattr(_public_key, "SSHLocalKeyPair")
    )


if _Base is not None:

    class _SignedFirst(_Base):  # type: ignore[misc]
        """publickey with the signed request sent first for a key from a local file."""

        async def _start(self) -> None:
            keypair = await self._conn.public_key_auth_requested()
            self._keypair = keypair
            if keypair is None:
                self._conn.try_next_auth(next_method=True)
                return
            if type(keypair) is not _public_key.SSHLocalKeyPair:  # an agent's or a token's key: ask first
                await self.send_request(Boolean(False), String(keypair.algorithm), String(keypair.public_data))
                return
            await self._send_signed_request()


def install() -> bool:
    """Use the signed-first publickey method for every asyncssh client connection of this process (idempotent);
    whether it is in use."""
    if not _usable():
        return False
    _auth._client_auth_handlers[_PUBLICKEY] = _SignedFirst
    return True


_USERAUTH = b"ssh-userauth"
_MSG_SERVICE_ACCEPT = 6


def pipeline_auth(conn: asyncssh.SSHClientConnection) -> None:
    """Called when the connection is made: begin authentication as soon as the auth service is requested (at the
    end of the key exchange), and take the server's accept, when it comes, as the formality it then is."""
    send = getattr(conn, "send_service_request", None)
    handlers = getattr(conn, "_packet_handlers", None)
    start = getattr(conn, "try_next_auth", None)
    if send is None or not isinstance(handlers, dict) or start is None or not _usable():
        return
    if _auth._client_auth_handlers.get(_PUBLICKEY) is not _SignedFirst:
        return

    def send_service_request(service: bytes) -> None:
        send(service)
        if service != _USERAUTH or getattr(conn, "_next_service", None) != _USERAUTH:
            return
        conn._packet_handlers = {**handlers, _MSG_SERVICE_ACCEPT: _accepted}
        conn._auth_in_progress = True
        owner = getattr(conn, "_owner", None)
        if owner is not None:
            owner.begin_auth(getattr(conn, "_username", ""))
        start()

    conn.send_service_request = send_service_request  # type: ignore[method-assign]


def _accepted(conn: Any, _pkttype: int, _pktid: int, packet: Any) -> None:
    """SERVICE_ACCEPT for the auth service already begun: checked like asyncssh checks it, nothing else."""
    service = packet.get_string()
    packet.check_end()
    if service != _USERAUTH:
        raise asyncssh.ServiceNotAvailable("Unexpected service in service accept")
    conn._next_service = None


def skip_none_probe(conn: asyncssh.SSHClientConnection) -> None:
    """Called when authentication begins: try publickey before "none" (whose only use is to learn the methods;
    the answer to a publickey request lists them just the same). Without a key, publickey passes at once to
    "none" and the usual order follows."""
    methods = getattr(conn, "_auth_methods", None)
    if methods == [b"none"] and _auth._client_auth_handlers.get(_PUBLICKEY) is _SignedFirst:
        conn._auth_methods = [_PUBLICKEY, b"none"]
