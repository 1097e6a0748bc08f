"""Another machine over ssh: one asyncssh connection per machine carries every command, port forward,
SFTP session and log tail.

Nothing on the far side is assumed beyond a POSIX shell, coreutils/findutils and /proc (and llama-server):
no python3, no agent of ours. Every command is an argv list joined with shlex.quote; where a shell script is
needed it is a constant and user values reach it only as positional parameters ("$1", "$2", ...).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import errno
import os
import posixpath
import secrets
import shlex
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import asyncssh

from app.services import probes
from app.services.errors import HostKeyError, TransportError
from app.services.transport import (
    Transport,
    expand_template,
    parse_spawn_output,
    pick_free_port,
    spawn_args,
)
from app.services.types import Connection, FileInfo, HostStats, RunResult

BACKOFF_START = 0.5
BACKOFF_MAX = 15.0
# OpenSSH's default MaxSessions is 10 per connection; long-lived tails and SFTP use some, so short commands
# are capped below it rather than being refused by the server under load.
MAX_COMMANDS = 6
_MISSING = 44  # exit code our scripts use for "no such file"

_START_TIME_SCRIPT = 'getconf CLK_TCK 2>/dev/null || echo 100; grep "^btime " /proc/stat; cat "/proc/$1/stat"'
_TREE_SCRIPT = "getconf PAGESIZE 2>/dev/null || echo 4096; cat /proc/[0-9]*/stat 2>/dev/null; exit 0"
_PORTS_SCRIPT = "cat /proc/net/tcp /proc/net/tcp6 2>/dev/null; exit 0"
_ENV_SCRIPT = 'printf "%s\\n%s" "$HOME" "${XDG_STATE_HOME-}"'
_READ_SCRIPT = f'[ -e "$1" ] || exit {_MISSING}; exec cat -- "$1"'
_HEAD_SCRIPT = f'[ -e "$2" ] || exit {_MISSING}; exec head -c "$1" -- "$2"'
_STAT_SCRIPT = f'[ -e "$1" ] || exit {_MISSING}; exec find -L "$1" -maxdepth 0 -printf "%s %T@\\n"'
_RENAME_SCRIPT = f'[ -e "$1" ] || [ -L "$1" ] || exit {_MISSING}; exec mv -f -- "$1" "$2"'
# The base64 fallback when the server has no SFTP subsystem: the data rides as an argument of sh -c (or on
# stdin when too big for one argument: Linux caps a single argument at 128 KiB), never inside shell text, and
# never through a heredoc, so no INI value depends on two layers of quoting. The far side says what it wrote.
_WRITE_SCRIPT = """p=$1; mode=$2
d=$(dirname -- "$p")
mkdir -p -- "$d" || exit 1
tmp=$(mktemp "$d/.llamaherd.XXXXXX") || exit 1
if [ "$#" -ge 3 ]; then printf %s "$3" | base64 -d >"$tmp"; else base64 -d >"$tmp"; fi &&
  chmod "$mode" "$tmp" && mv -f -- "$tmp" "$p" && printf "%s\\n" "$p" && exit 0
rm -f -- "$tmp"
exit 1
"""
_ARG_LIMIT = 96 * 1024
# tail -F until our side goes away: closing the channel does not stop a remote command that never writes
# (an idle log), so the wrapper waits for stdin to close (our EOF, or sshd closing it when the link drops)
# and then stops tail itself.
_TAIL_SCRIPT = 'tail -n "$1" -F -- "$2" 2>/dev/null & t=$!; cat >/dev/null; kill "$t" 2>/dev/null; exit 0'


def _fs_arg(path: str) -> str:
    """A path that find/head cannot take for an option."""
    return "./" + path if path.startswith("-") else path


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    if isinstance(exc, TimeoutError) and not text:
        return "timed out"
    return text or type(exc).__name__


class _Forward:
    """One local listener for one remote port. It lives as long as the transport, not the connection, so the
    local port (and every URL built on it) stays the same across reconnects."""

    def __init__(self, remote_port: int) -> None:
        self.remote_port = remote_port
        self.server: asyncio.Server | None = None
        self.local_port = 0
        self.writers: set[Any] = set()


class _Client(asyncssh.SSHClient):
    """Host-key policy and link-loss notice for one connection attempt."""

    def __init__(self, owner: SshTransport, known: Any) -> None:
        self._owner = owner
        self._known = known
        self.problem: tuple[str, str, int, Any] | None = None  # (kind, host, port, key)
        self.accepted: tuple[str, int, Any] | None = None

    def validate_host_public_key(self, host: str, addr: str, port: int, key: Any) -> bool:
        # Only called for a key known_hosts does not already trust. If known_hosts holds any key for this
        # host it CHANGED, which is never accepted, whatever accept_new_host_key says.
        found = self._known.match(host, addr, port if port != 22 else None)
        if found[0] or found[1]:
            self.problem = ("changed", host, port, key)
            return False
        if self._owner.accept_new_host_key:
            self.accepted = (host, port, key)
            return True
        self.problem = ("unknown", host, port, key)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._owner._on_connection_lost(self, exc)


class SshTransport(Transport):
    """A machine reached over ssh."""

    is_local = False

    def __init__(
        self,
        name: str,
        host: str,
        *,
        user: str | None = None,
        port: int | None = None,
        identity_file: str | None = None,
        accept_new_host_key: bool = False,
        known_hosts: str | None = None,
        ssh_config: str | None = None,
        connect_timeout: float = 5.0,
        keepalive_interval: float = 15.0,
    ) -> None:
        super().__init__(name)
        self.host = host
        self.user = user
        self.port = port
        self.identity_file = os.path.expanduser(identity_file) if identity_file else None
        self.accept_new_host_key = accept_new_host_key
        self.known_hosts = os.path.expanduser(known_hosts or "~/.ssh/known_hosts")
        if ssh_config is None:
            default = os.path.expanduser("~/.ssh/config")
            self.ssh_config: str | None = default if os.path.isfile(default) else None
        else:
            self.ssh_config = os.path.expanduser(ssh_config)
        self.connect_timeout = connect_timeout
        self.keepalive_interval = keepalive_interval

        self._conn: Any = None  # asyncssh.SSHClientConnection while connected
        self._client: _Client | None = None
        self._lock = asyncio.Lock()
        self._closed = False
        self._backoff = BACKOFF_START
        self._next_attempt = 0.0
        self._last_error: TransportError | None = None
        self._reconnect_task: asyncio.Task[None] | None = None
        self._commands = asyncio.Semaphore(MAX_COMMANDS)
        self._sftp: Any = None
        self._sftp_conn: Any = None  # the connection _sftp was checked on
        self._sftp_lock = asyncio.Lock()
        self._env: tuple[str, str | None] | None = None
        self._forwards: dict[int, _Forward] = {}
        self._fwd_lock = asyncio.Lock()
        self._prev_cpu: probes.CpuSample | None = None
        self.connects = 0  # successful connections so far (tests and the status line use it)

    # ---- connection ----

    @property
    def has_sftp(self) -> bool | None:
        """Whether this connection's server offers SFTP; None until first needed."""
        if self._sftp_conn is None or self._sftp_conn is not self._conn:
            return None
        return self._sftp is not None

    async def connect(self) -> None:
        """Connect now (an explicit request skips the backoff wait)."""
        self._closed = False
        self._next_attempt = 0.0
        await self.ensure_connected()

    async def ensure_connected(self) -> Any:
        """The live connection, connecting if needed. While the machine is unreachable this fails at once with
        the last reason until the backoff has passed, so a dead machine never makes its callers wait."""
        conn = self._conn
        if conn is not None and not conn.is_closed():
            return conn
        if self._closed:
            raise TransportError(f"{self.name}: transport is closed")
        async with self._lock:
            conn = self._conn
            if conn is not None and not conn.is_closed():
                return conn
            loop = asyncio.get_running_loop()
            err = self._last_error
            if err is not None and loop.time() < self._next_attempt:
                wait = self._next_attempt - loop.time()
                if isinstance(err, HostKeyError):
                    raise HostKeyError(str(err))
                raise TransportError(f"{err} (retrying in {wait:.1f} s)")
            if self._state != Connection.UNREACHABLE:  # a retry keeps saying "unreachable" and why
                self._set_state(Connection.CONNECTING, self._state_reason)
            try:
                conn, client = await self._connect_once()
            except TransportError as e:
                self._last_error = e
                self._next_attempt = loop.time() + self._backoff
                self._backoff = min(self._backoff * 2, BACKOFF_MAX)
                self._set_state(Connection.UNREACHABLE, str(e))
                if not isinstance(e, HostKeyError):  # retrying cannot fix a host key; an operator must
                    self._start_reconnect()
                raise
            if self._closed:  # close() ran while we were connecting
                conn.close()
                raise TransportError(f"{self.name}: transport is closed")
            self._conn, self._client = conn, client
            self._backoff, self._next_attempt, self._last_error = BACKOFF_START, 0.0, None
            self._env = None
            self.connects += 1
            self._set_state(Connection.CONNECTED, "")
            return conn

    def _connect_options(self, known: Any, factory: Any) -> dict[str, Any]:
        opts: dict[str, Any] = {
            "known_hosts": known,
            "client_factory": factory,
            "config": [self.ssh_config] if self.ssh_config else [],
            "connect_timeout": self.connect_timeout,
            "keepalive_interval": self.keepalive_interval,
            "keepalive_count_max": 3,
            "agent_path": os.environ.get("SSH_AUTH_SOCK") or None,
        }
        if self.port is not None:
            opts["port"] = self.port
        if self.user:
            opts["username"] = self.user
        if self.identity_file:
            opts["client_keys"] = [self.identity_file]
        return opts

    async def _connect_once(self) -> tuple[Any, _Client]:
        try:
            known = await asyncio.to_thread(self._load_known_hosts)
        except (OSError, ValueError) as e:
            raise TransportError(f"{self.name}: cannot read {self.known_hosts}: {_describe(e)}") from None
        made: list[_Client] = []

        def factory() -> _Client:
            c = _Client(self, known)
            made.append(c)
            return c

        opts = self._connect_options(known, factory)
        try:
            algs = await asyncio.to_thread(self._host_key_algs, known)
        except (asyncssh.Error, OSError, ValueError) as e:
            raise TransportError(f"{self.name}: cannot use the ssh settings for {self.host}: {e}") from None
        if algs:
            opts["server_host_key_algs"] = algs
        try:
            # asyncssh's connect_timeout covers the handshake; the outer bound is for anything it misses.
            conn = await asyncio.wait_for(asyncssh.connect(self.host, **opts), self.connect_timeout + 2)
        except asyncssh.HostKeyNotVerifiable as e:
            raise HostKeyError(self._host_key_message(made[-1] if made else None, e)) from None
        except (asyncssh.Error, OSError, TimeoutError, ValueError) as e:
            raise TransportError(f"{self.name}: cannot connect to {self.host}: {_describe(e)}") from None
        client = made[-1]
        if client.accepted is not None:
            host, port, key = client.accepted
            try:
                await asyncio.to_thread(self._record_host_key, host, port, key)
            except OSError as e:
                conn.close()
                raise TransportError(f"{self.name}: cannot record the host key: {_describe(e)}") from None
        return conn, client

    def _host_key_algs(self, known: Any) -> list[str] | None:
        """Host key algorithms to offer: those of the keys known_hosts holds for this host first, then every
        other one, as OpenSSH does. asyncssh alone offers only the known types, so a server that now has a
        key of another type would hang up mid-handshake ("connection reset") instead of being reported as a
        CHANGED key."""
        resolved = asyncssh.SSHClientConnectionOptions(
            host=self.host,
            port=self.port if self.port is not None else (),
            config=[self.ssh_config] if self.ssh_config else [],
            client_keys=None,
            agent_path=None,
        )
        host = resolved.host_key_alias or resolved.host
        port = int(resolved.port)
        found = known.match(host, "", port if port != 22 else None)
        first: list[bytes] = [alg for key in found[0] for alg in key.sig_algorithms]
        if not first:
            return None  # nothing known: asyncssh's defaults, and validate_host_public_key decides
        rest = [a for a in asyncssh.public_key.get_default_public_key_algs() if a not in first]
        return [a.decode("ascii") for a in dict.fromkeys(first + rest)]

    def _load_known_hosts(self) -> Any:
        try:
            with open(self.known_hosts, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except FileNotFoundError:
            text = ""
        # An object, not the path: asyncssh treats an empty argument as "use ~/.ssh/known_hosts".
        return asyncssh.import_known_hosts(text)

    def _record_host_key(self, host: str, port: int, key: Any) -> None:
        pattern = host if port == 22 else f"[{host}]:{port}"
        alg_b64 = " ".join(key.export_public_key("openssh").decode().split()[:2])
        parent = os.path.dirname(self.known_hosts)
        if parent:
            os.makedirs(parent, mode=0o700, exist_ok=True)
        fd = os.open(self.known_hosts, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as f:
            f.write(f"{pattern} {alg_b64}\n")

    def _host_key_message(self, client: _Client | None, exc: Exception) -> str:
        if client is None or client.problem is None:
            return f"{self.name}: the ssh host key of {self.host} was refused: {_describe(exc)}"
        kind, host, port, key = client.problem
        where = host if port == 22 else f"{host} port {port}"
        what = f"{key.get_algorithm()} {key.get_fingerprint()}"
        keyscan = f"ssh-keyscan -p {port} {shlex.quote(host)} >> {shlex.quote(self.known_hosts)}"
        if kind == "changed":
            pattern = host if port == 22 else f"[{host}]:{port}"
            return (
                f"WARNING: {self.name}: the ssh host key of {where} has CHANGED (it is now {what}; "
                f"{self.known_hosts} holds a different one). Somebody may be intercepting the connection, "
                "or the machine was reinstalled. Refusing to connect. If the change is expected, remove the "
                f"old key with `ssh-keygen -f {shlex.quote(self.known_hosts)} -R {shlex.quote(pattern)}` "
                f"and accept the new one with `{keyscan}`."
            )
        return (
            f"{self.name}: the ssh host key of {where} is not known ({what}); refusing to connect. "
            f"If this is the right machine, accept it with `{keyscan}`, or set "
            f"`accept_new_host_key = true` for machine '{self.name}' in config.toml."
        )

    def _on_connection_lost(self, client: _Client, exc: Exception | None) -> None:
        if client is not self._client:
            return  # a failed attempt, or an older connection
        self._conn = self._client = None
        self._sftp = self._sftp_conn = None
        if self._closed:
            return
        self._set_state(Connection.CONNECTING, f"connection lost: {_describe(exc) if exc else 'closed'}")
        self._start_reconnect()

    def _start_reconnect(self) -> None:
        if self._closed or (self._reconnect_task is not None and not self._reconnect_task.done()):
            return
        self._reconnect_task = asyncio.get_running_loop().create_task(self._reconnect_loop())

    async def _reconnect_loop(self) -> None:
        """Reconnect in the background (so forwards and state come back by themselves) with the backoff."""
        loop = asyncio.get_running_loop()
        while not self._closed and (self._conn is None or self._conn.is_closed()):
            await asyncio.sleep(max(0.0, self._next_attempt - loop.time()))
            if self._closed:
                return
            try:
                await self.ensure_connected()
            except HostKeyError:
                return
            except TransportError:
                continue

    async def close(self) -> None:
        self._closed = True
        task, self._reconnect_task = self._reconnect_task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for fwd in self._forwards.values():
            if fwd.server is not None:
                fwd.server.close()
            for w in list(fwd.writers):
                w.close()
        self._forwards.clear()
        sftp, self._sftp, self._sftp_conn = self._sftp, None, None
        if sftp is not None:
            sftp.exit()
        conn, self._conn, self._client = self._conn, None, None
        if conn is not None:
            conn.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.wait_closed(), 2)
        self._set_state(Connection.UNREACHABLE, "closed")

    # ---- commands ----

    async def _exec(
        self, command: str, *, input: bytes | None = None, timeout: float | None = 30, what: str = ""
    ) -> RunResult:
        conn = await self.ensure_connected()
        async with self._commands:
            proc: Any = None
            try:
                proc = await conn.create_process(
                    command,
                    encoding=None,
                    stdin=asyncssh.PIPE if input is not None else asyncssh.DEVNULL,
                )
                if input is not None:
                    proc.stdin.write(input)
                    proc.stdin.write_eof()
                done = await proc.wait(timeout=timeout)
            except asyncssh.TimeoutError:
                with contextlib.suppress(Exception):
                    proc.terminate()  # OpenSSH >= 7.9 delivers it; then drop the channel either way
                    proc.close()
                raise TransportError(f"{self.name}: {what or 'command'} timed out after {timeout} s") from None
            except (asyncssh.Error, OSError) as e:
                raise TransportError(f"{self.name}: {what or 'command'} failed: {_describe(e)}") from None
            finally:
                if proc is not None:
                    proc.close()
        if done.exit_status is None and done.exit_signal is None:
            raise TransportError(f"{self.name}: connection lost while running {what or 'a command'}")
        rc = done.returncode if done.returncode is not None else -1
        return RunResult(int(rc), bytes(done.stdout or b""), bytes(done.stderr or b""))

    async def run(self, argv: Sequence[str], *, input: bytes | None = None, timeout: float | None = 30) -> RunResult:
        if not argv:
            raise ValueError("run needs a program")
        return await self._exec(shlex.join(argv), input=input, timeout=timeout, what=argv[0])

    async def _sh(self, script: str, *args: str, input: bytes | None = None, what: str = "") -> RunResult:
        """A constant script with values only as positional parameters."""
        return await self._exec(shlex.join(["sh", "-c", script, "sh", *args]), input=input, what=what or "sh")

    async def spawn_detached(
        self,
        argv: Sequence[str],
        *,
        log_path: str,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> int:
        res = await self._exec(shlex.join(spawn_args(argv, log_path, env, cwd)), what=argv[0] if argv else "")
        return parse_spawn_output(self.name, res)

    async def pid_alive(self, pid: int) -> bool:
        res = await self.run(["cat", f"/proc/{int(pid)}/stat"])
        if not res.ok:
            return False
        try:
            return probes.parse_pid_stat(res.stdout.decode(errors="replace")).state != "Z"
        except ValueError:
            return False

    async def process_start_time(self, pid: int) -> float | None:
        return await self._start_time(pid, live_only=False)

    async def live_start_time(self, pid: int) -> float | None:
        # One command instead of two: each remote command pays for the login shell (~100+ ms with a heavy .bashrc).
        return await self._start_time(pid, live_only=True)

    async def _start_time(self, pid: int, *, live_only: bool) -> float | None:
        res = await self._sh(_START_TIME_SCRIPT, str(int(pid)), what="process start time")
        lines = res.stdout.decode(errors="replace").splitlines()
        if not res.ok or len(lines) < 3:
            return None
        try:
            clk = int(lines[0])
            btime = probes.parse_btime(lines[1])
            st = probes.parse_pid_stat(lines[2])
        except ValueError:
            return None
        if live_only and st.state == "Z":
            return None
        return probes.start_time(st.starttime, clk, btime)

    async def kill(self, pid: int, sig: int) -> bool:
        res = await self.run(["kill", f"-{int(sig)}", str(int(pid))])
        return res.ok

    async def process_tree_rss(self, pid: int) -> int | None:
        res = await self._sh(_TREE_SCRIPT, what="process list")
        first, _, rest = res.stdout.decode(errors="replace").partition("\n")
        try:
            page = int(first.strip())
        except ValueError:
            page = 4096
        return probes.tree_rss(probes.parse_pid_stats(rest), int(pid), page)

    # ---- files ----

    def _missing(self, path: str) -> FileNotFoundError:
        return FileNotFoundError(errno.ENOENT, f"{self.name}: no such file", path)

    def _failed(self, what: str, path: str, res: RunResult) -> TransportError:
        detail = res.stderr.decode(errors="replace").strip() or f"exit code {res.returncode}"
        return TransportError(f"{self.name}: {what} {path}: {detail}")

    async def read_file(self, path: str) -> bytes:
        res = await self._sh(_READ_SCRIPT, path, what="read")
        if res.returncode == _MISSING:
            raise self._missing(path)
        if not res.ok:
            raise self._failed("cannot read", path, res)
        return res.stdout

    async def read_head(self, path: str, n: int) -> bytes:
        res = await self._sh(_HEAD_SCRIPT, str(max(0, int(n))), _fs_arg(path), what="read")
        if res.returncode == _MISSING:
            raise self._missing(path)
        if not res.ok:
            raise self._failed("cannot read", path, res)
        return res.stdout

    async def _get_sftp(self, conn: Any) -> Any:
        """The connection's SFTP client, or None when the server has no SFTP subsystem (checked once)."""
        async with self._sftp_lock:
            if self._sftp_conn is conn:
                return self._sftp
            try:
                sftp = await asyncio.wait_for(conn.start_sftp_client(), self.connect_timeout)
            except (asyncssh.Error, OSError, TimeoutError):
                sftp = None
            self._sftp, self._sftp_conn = sftp, conn
            return sftp

    async def write_file_atomic(self, path: str, data: bytes, mode: int = 0o600) -> None:
        conn = await self.ensure_connected()
        sftp = await self._get_sftp(conn)
        if sftp is not None:
            try:
                await self._sftp_write(sftp, path, data, mode)
            except (asyncssh.Error, OSError) as e:
                raise TransportError(f"{self.name}: cannot write {path}: {_describe(e)}") from None
            return
        b64 = base64.b64encode(data).decode("ascii")
        args = [path, format(mode & 0o7777, "o")]
        if len(b64) <= _ARG_LIMIT:
            res = await self._sh(_WRITE_SCRIPT, *args, b64, what="write")
        else:
            res = await self._sh(_WRITE_SCRIPT, *args, input=b64.encode("ascii"), what="write")
        if not res.ok:
            raise self._failed("cannot write", path, res)
        wrote = res.stdout.decode(errors="replace").rstrip("\n")
        if wrote != path:
            raise TransportError(f"{self.name}: writing {path}: the far side reported {wrote!r}")

    async def _sftp_write(self, sftp: Any, path: str, data: bytes, mode: int) -> None:
        parent = posixpath.dirname(path)
        if parent:
            await sftp.makedirs(parent, exist_ok=True)
        tmp = posixpath.join(parent, f".{posixpath.basename(path)}.{secrets.token_hex(4)}.tmp")
        try:
            async with sftp.open(tmp, "wb", attrs=asyncssh.SFTPAttrs(permissions=mode)) as f:
                await f.write(data)
            await sftp.chmod(tmp, mode)  # the server's umask applies at create
            try:
                await sftp.posix_rename(tmp, path)  # rename over an existing file, atomically
            except asyncssh.SFTPOpUnsupported:
                with contextlib.suppress(asyncssh.SFTPNoSuchFile):
                    await sftp.remove(path)
                await sftp.rename(tmp, path)
        except BaseException:
            with contextlib.suppress(Exception):
                await sftp.remove(tmp)
            raise

    async def stat(self, path: str) -> FileInfo | None:
        res = await self._sh(_STAT_SCRIPT, _fs_arg(path), what="stat")
        if res.returncode == _MISSING:
            return None
        if not res.ok:
            raise self._failed("cannot stat", path, res)
        try:
            size, mtime = res.stdout.decode().split()[:2]
            return FileInfo(path, int(size), float(mtime))
        except ValueError:
            raise self._failed("cannot stat", path, res) from None

    async def remove(self, path: str) -> None:
        res = await self.run(["rm", "-f", "--", path])
        if not res.ok:
            raise self._failed("cannot remove", path, res)

    async def rename(self, src: str, dst: str) -> None:
        res = await self._sh(_RENAME_SCRIPT, src, dst, what="rename")
        if res.returncode == _MISSING:
            raise self._missing(src)
        if not res.ok:
            raise self._failed("cannot rename", src, res)

    async def list_files(self, dirs: Sequence[str], pattern: str = "*.gguf", max_depth: int = 2) -> list[FileInfo]:
        roots = [_fs_arg((await self.expand(d)).rstrip("/") or "/") for d in dirs]
        if not roots:
            return []
        argv = ["find", "-L", *roots, "-maxdepth", str(int(max_depth)), "-type", "f", "-name", pattern]
        argv += ["-printf", "%s\\t%T@\\t%p\\0"]
        # Missing directories make find exit 1 but it still lists the others.
        res = await self.run(argv, timeout=60)
        found: dict[str, FileInfo] = {}
        for rec in res.stdout.split(b"\0"):
            parts = rec.split(b"\t", 2)
            if len(parts) != 3:
                continue
            try:
                p = parts[2].decode("utf-8", errors="surrogateescape")
                found[p] = FileInfo(p, int(parts[0]), float(parts[1]))
            except ValueError:
                continue
        return [found[k] for k in sorted(found)]

    async def _remote_env(self) -> tuple[str, str | None]:
        # Read once per connection: $HOME and $XDG_STATE_HOME as that machine's shell sees them.
        if self._env is None:
            res = await self._sh(_ENV_SCRIPT, what="environment")
            if not res.ok:
                raise self._failed("cannot read", "$HOME", res)
            home, _, xdg = res.stdout.decode(errors="replace").partition("\n")
            if not home:
                raise TransportError(f"{self.name}: $HOME is not set on the remote side")
            self._env = (home, xdg or None)
        return self._env

    async def expand(self, path: str) -> str:
        if "~" not in path and "$" not in path:
            return path
        home, xdg = await self._remote_env()
        return expand_template(path, home, xdg)

    # ---- network ----

    async def free_port(self) -> int:
        res = await self._sh(_PORTS_SCRIPT, what="port list")
        return pick_free_port(probes.parse_proc_net_tcp(res.stdout.decode(errors="replace")))

    async def forward_port(self, remote_port: int) -> int:
        remote_port = int(remote_port)
        fwd = self._forwards.get(remote_port)
        if fwd is not None:
            return fwd.local_port
        await self.ensure_connected()
        async with self._fwd_lock:
            fwd = self._forwards.get(remote_port)
            if fwd is not None:
                return fwd.local_port
            fwd = _Forward(remote_port)

            async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                await self._serve_forward(fwd, reader, writer)

            fwd.server = await asyncio.start_server(serve, "127.0.0.1", 0)
            fwd.local_port = int(fwd.server.sockets[0].getsockname()[1])
            self._forwards[remote_port] = fwd
            return fwd.local_port

    async def _serve_forward(self, fwd: _Forward, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        fwd.writers.add(writer)
        try:
            try:
                conn = await self.ensure_connected()
                r2, w2 = await conn.open_connection("127.0.0.1", fwd.remote_port)
            except (TransportError, asyncssh.Error, OSError):
                return  # closing the socket tells the client; it retries like any refused connection
            fwd.writers.add(w2)
            try:
                up = asyncio.ensure_future(_pump(reader, w2, half_close=True))
                await _pump(r2, writer, half_close=False)
                up.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await up
            finally:
                w2.close()
                fwd.writers.discard(w2)
        finally:
            fwd.writers.discard(writer)
            writer.close()

    # ---- following and measuring ----

    async def tail(self, path: str, *, lines: int = 200) -> AsyncIterator[str]:
        """Yields the last lines and follows. Ends with TransportError if the link drops (the caller decides
        whether to tail again: lines written during the gap cannot be told apart from old ones)."""
        conn = await self.ensure_connected()
        cmd = shlex.join(["sh", "-c", _TAIL_SCRIPT, "sh", str(max(0, int(lines))), path])
        try:
            proc = await conn.create_process(cmd, encoding=None, stderr=asyncssh.DEVNULL)
        except (asyncssh.Error, OSError) as e:
            raise TransportError(f"{self.name}: cannot follow {path}: {_describe(e)}") from None
        try:
            while True:
                try:
                    raw = await proc.stdout.readline()
                except (asyncssh.Error, OSError) as e:
                    raise TransportError(f"{self.name}: following {path} stopped: {_describe(e)}") from None
                if not raw:
                    break
                yield raw.removesuffix(b"\n").removesuffix(b"\r").decode("utf-8", errors="replace")
            if not self._closed:
                raise TransportError(f"{self.name}: following {path} stopped: the connection was lost")
        finally:
            with contextlib.suppress(Exception):
                proc.stdin.write_eof()  # the remote wrapper stops tail when its stdin closes
            proc.close()

    async def host_stats(self) -> HostStats:
        res = await self._sh(probes.HOST_STATS_SCRIPT, what="host stats")
        try:
            p = probes.parse_host_probe(res.stdout.decode(errors="replace"))
        except ValueError as e:
            raise TransportError(f"{self.name}: unexpected host stats: {e}") from None
        cpu = probes.cpu_percent(self._prev_cpu, p.cpu)
        self._prev_cpu = p.cpu
        return HostStats(cpu_pct=cpu, mem_used=p.mem_used, mem_total=p.mem_total, load_avg=p.load_avg, gpus=p.gpus)


async def _pump(src: Any, dst: Any, *, half_close: bool) -> None:
    """Copy until EOF with backpressure (drain), then pass the EOF on (or close, for the server's side)."""
    try:
        while True:
            data = await src.read(65536)
            if not data:
                break
            dst.write(data)
            await dst.drain()
        if half_close and dst.can_write_eof():
            dst.write_eof()
    except (OSError, asyncssh.Error, ConnectionError):
        dst.close()
