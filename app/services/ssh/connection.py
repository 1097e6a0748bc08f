"""One asyncssh connection to a machine, kept up: connect on demand, back off while the machine is unreachable,
reconnect in the background after a loss, and report the connection's state to the transport that owns it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass

import asyncssh

from app.services.core.backoff import Backoff
from app.services.core.errors import HostKeyError, TransportError
from app.services.core.host_types import Connection
from app.services.core.waits import within
from app.services.ssh.asyncssh_auth import install as signed_first_auth
from app.services.ssh.ciphers import cipher_order
from app.services.ssh.host_keys import (
    SshClient,
    describe,
    host_key_algs,
    load_known_hosts,
    record_host_key,
    refusal_message,
)
from app.services.ssh.remote_trace import note

StateSink = Callable[[Connection, str], None]

# A silent link loss (packets dropped, no RST) is noticed by keepalives alone: one is sent after KEEPALIVE_EVERY
# seconds without a packet from the server, and the link is declared lost when KEEPALIVE_MISSES of them go
# unanswered, i.e. at most (KEEPALIVE_MISSES + 1) * KEEPALIVE_EVERY = 8 s after the last packet (with 15 s x 3
# it was 60 s). Three misses rather than two: a slow link (450 ms round trip) or a busy server gets 6 s to
# answer one. The cost: a followed machine is rarely silent for 2 s (host stats every 2 s), so few are sent;
# an idle connection sends one ~100-byte request every 2 s.
KEEPALIVE_EVERY = 2.0
KEEPALIVE_MISSES = 3


@dataclass(frozen=True)
class SshTarget:
    """Where and how to connect; paths already expanded."""

    name: str
    host: str
    user: str | None
    port: int | None
    identity_file: str | None
    accept_new_host_key: bool
    known_hosts: str
    ssh_config: str | None
    connect_timeout: float
    keepalive_interval: float


class SshLink:
    def __init__(self, target: SshTarget, state: Callable[[], tuple[Connection, str]], set_state: StateSink) -> None:
        self.target = target
        self._state = state  # the owner's (connection state, reason)
        self._set_state = set_state
        self.conn: asyncssh.SSHClientConnection | None = None
        self._client: SshClient | None = None
        self._lock = asyncio.Lock()
        self.closed = False
        self._backoff = Backoff()
        self._next_attempt = 0.0
        self._last_error: TransportError | None = None
        self._reconnect_task: asyncio.Task[None] | None = None
        self._sftp: asyncssh.SFTPClient | None = None
        self._sftp_conn: asyncssh.SSHClientConnection | None = None  # the connection _sftp was checked on
        self._sftp_lock = asyncio.Lock()
        self.connects = 0  # successful connections so far

    @property
    def has_sftp(self) -> bool | None:
        """Whether this connection's server offers SFTP; None until first needed."""
        if self._sftp_conn is None or self._sftp_conn is not self.conn:
            return None
        return self._sftp is not None

    async def connect(self) -> None:
        """Connect now (an explicit request skips the backoff wait)."""
        self.closed = False
        self._next_attempt = 0.0
        await self.ensure_connected()

    async def ensure_connected(self) -> asyncssh.SSHClientConnection:
        """The live connection, connecting if needed. While the machine is unreachable this fails at once with
        the last reason until the backoff has passed, so a dead machine never makes its callers wait."""
        name = self.target.name
        conn = self.conn
        if conn is not None and not conn.is_closed():
            return conn
        if self.closed:
            raise TransportError(f"{name}: transport is closed")
        async with self._lock:
            conn = self.conn
            if conn is not None and not conn.is_closed():
                return conn
            loop = asyncio.get_running_loop()
            err = self._last_error
            if err is not None and loop.time() < self._next_attempt:
                wait = self._next_attempt - loop.time()
                if isinstance(err, HostKeyError):
                    raise HostKeyError(str(err))
                raise TransportError(f"{err} (retrying in {wait:.1f} s)")
            state, reason = self._state()
            if state != Connection.UNREACHABLE:  # a retry keeps saying "unreachable" and why
                self._set_state(Connection.CONNECTING, reason)
            try:
                conn, client = await self._connect_once()
            except TransportError as e:
                self._last_error = e
                self._next_attempt = loop.time() + self._backoff.next()
                self._set_state(Connection.UNREACHABLE, str(e))
                if not isinstance(e, HostKeyError):  # retrying cannot fix a host key; an operator must
                    self._start_reconnect()
                raise
            if self.closed:  # close() ran while we were connecting
                conn.close()
                raise TransportError(f"{name}: transport is closed")
            self.conn, self._client = conn, client
            self._backoff.reset()
            self._next_attempt, self._last_error = 0.0, None
            self.connects += 1
            self._set_state(Connection.CONNECTED, "")
            return conn

    def _connect_options(self, known: asyncssh.SSHKnownHosts, factory: Callable[[], SshClient]) -> dict[str, object]:
        t = self.target
        opts: dict[str, object] = {
            "known_hosts": known,
            "client_factory": factory,
            "config": [t.ssh_config] if t.ssh_config else [],
            "connect_timeout": t.connect_timeout,
            "keepalive_interval": t.keepalive_interval,
            "keepalive_count_max": KEEPALIVE_MISSES,
            "agent_path": os.environ.get("SSH_AUTH_SOCK") or None,
        }
        if t.port is not None:
            opts["port"] = t.port
        if t.user:
            opts["username"] = t.user
        if t.identity_file:
            opts["client_keys"] = [t.identity_file]
        return opts

    async def _connect_once(self) -> tuple[asyncssh.SSHClientConnection, SshClient]:
        t = self.target
        try:
            known = await asyncio.to_thread(load_known_hosts, t.known_hosts)
        except (OSError, ValueError) as e:
            raise TransportError(f"{t.name}: cannot read {t.known_hosts}: {describe(e)}") from None
        made: list[SshClient] = []

        def factory() -> SshClient:
            c = SshClient(known, t.accept_new_host_key, self._on_connection_lost)
            made.append(c)
            return c

        opts = self._connect_options(known, factory)

        def settings() -> tuple[list[str] | None, list[str] | None]:
            # Both read the machine's ssh_config (a file): one trip to a thread for the two.
            return host_key_algs(known, t.host, t.port, t.ssh_config), cipher_order(t.ssh_config)

        try:
            algs, ciphers = await asyncio.to_thread(settings)
        except (asyncssh.Error, OSError, ValueError) as e:
            raise TransportError(f"{t.name}: cannot use the ssh settings for {t.host}: {e}") from None
        if algs:
            opts["server_host_key_algs"] = algs
        if ciphers:
            opts["encryption_algs"] = ciphers
        signed_first_auth()  # one round trip for a key file's auth, not three
        note(t.name, "connect", t.host)
        try:
            # asyncssh's connect_timeout covers the handshake; the outer bound is for anything it misses.
            conn = await within(asyncssh.connect(t.host, **opts), t.connect_timeout + 2)
        except asyncssh.HostKeyNotVerifiable as e:
            client = made[-1] if made else None
            raise HostKeyError(refusal_message(t.name, t.host, t.known_hosts, client, e)) from None
        except (asyncssh.Error, OSError, TimeoutError, ValueError) as e:
            raise TransportError(f"{t.name}: cannot connect to {t.host}: {describe(e)}") from None
        client = made[-1]
        if client.accepted is not None:
            try:
                await asyncio.to_thread(record_host_key, t.known_hosts, client.accepted)
            except OSError as e:
                conn.close()
                raise TransportError(f"{t.name}: cannot record the host key: {describe(e)}") from None
        return conn, client

    def _on_connection_lost(self, client: SshClient, exc: Exception | None) -> None:
        if client is not self._client:
            return  # a failed attempt, or an older connection
        self.conn = self._client = None
        self._sftp = self._sftp_conn = None
        if self.closed:
            return
        why = f"connection lost: {describe(exc) if exc else 'closed'}"
        # Keepalives unanswered: the link is dead, not just cut (a cut connection reconnects within a second).
        silent = exc is not None and "keepalive" in str(exc)
        self._set_state(Connection.UNREACHABLE if silent else Connection.CONNECTING, why)
        self._start_reconnect()

    def _start_reconnect(self) -> None:
        if self.closed or (self._reconnect_task is not None and not self._reconnect_task.done()):
            return
        self._reconnect_task = asyncio.get_running_loop().create_task(self._reconnect_loop())

    async def _reconnect_loop(self) -> None:
        """Reconnect in the background (so forwards and state come back by themselves) with the backoff."""
        loop = asyncio.get_running_loop()
        while not self.closed and (self.conn is None or self.conn.is_closed()):
            await asyncio.sleep(max(0.0, self._next_attempt - loop.time()))
            if self.closed:
                return
            try:
                await self.ensure_connected()
            except HostKeyError:
                return
            except TransportError:
                continue

    async def sftp(self, conn: asyncssh.SSHClientConnection) -> asyncssh.SFTPClient | None:
        """The connection's SFTP client, or None when the server has no SFTP subsystem (checked once)."""
        async with self._sftp_lock:
            if self._sftp_conn is conn:
                return self._sftp
            sftp: asyncssh.SFTPClient | None
            note(self.target.name, "sftp", "start")
            try:
                sftp = await within(conn.start_sftp_client(), self.target.connect_timeout)
            except (asyncssh.Error, OSError, TimeoutError):
                sftp = None
            self._sftp, self._sftp_conn = sftp, conn
            return sftp

    async def stop_reconnecting(self) -> None:
        """Mark closed and stop the background reconnect: the first half of closing."""
        self.closed = True
        task, self._reconnect_task = self._reconnect_task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def close(self) -> None:
        await self.stop_reconnecting()
        sftp, self._sftp, self._sftp_conn = self._sftp, None, None
        if sftp is not None:
            sftp.exit()
        conn, self.conn, self._client = self.conn, None, None
        if conn is not None:
            conn.close()
            with contextlib.suppress(Exception):
                await within(conn.wait_closed(), 2)
        self._set_state(Connection.UNREACHABLE, "closed")
