"""Another machine over ssh: one asyncssh connection per machine carries every command, port forward,
SFTP session and log tail.

Nothing on the far side is assumed beyond a POSIX shell, coreutils/findutils and /proc (and llama-server):
no python3, nothing installed. Short commands go through one remote shell per connection (ssh/remote_shell.py), or
one ssh session each where that shell cannot run. Every command is an argv list joined with shlex.quote; where a
shell script is needed it is a constant (hosts/shell_scripts.py) and user values reach it only as positional parameters.

The connection is kept up by ssh/connection.py (host-key policy in ssh/host_keys.py); port forwards are
ssh/port_forward.py.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import errno
import os
import posixpath
import shlex
import time
from collections.abc import AsyncIterator, Mapping, Sequence

import asyncssh

from app.services.core.errors import TransportError, WriteFailed
from app.services.core.host_types import FileInfo, HostStats, RunResult
from app.services.core.waits import within
from app.services.hosts import proc_probes
from app.services.hosts.process_start import ProcStart
from app.services.hosts.shared_reads import SharedReads
from app.services.hosts.shell_scripts import (
    ARGV_LIMIT,
    ARGV_SCRIPT,
    ENV_SCRIPT,
    HEAD_SCRIPT,
    MISSING,
    PORTS_SCRIPT,
    READ_SCRIPT,
    RENAME_SCRIPT,
    SPAWN_THEN_START_TIME,
    SPAWNED_MARK,
    START_TIME_SCRIPT,
    STAT_SCRIPT,
    TREE_SCRIPT,
    WRITE_SCRIPT,
)
from app.services.hosts.transport import Transport, expand_template, parse_spawn_output, pick_free_port, spawn_args
from app.services.hosts.write_errors import DIAGNOSE_SCRIPT, diagnosed_cause, sftp_cause, stderr_cause
from app.services.ssh.connection import KEEPALIVE_EVERY, SshLink, SshTarget
from app.services.ssh.here_document import here_document
from app.services.ssh.host_keys import describe
from app.services.ssh.log_tail import follow_log
from app.services.ssh.port_forward import PortForwards
from app.services.ssh.remote_shell import AgentDown, AgentKeeper
from app.services.ssh.remote_trace import note
from app.services.ssh.sftp_write import sftp_write

# OpenSSH's default MaxSessions is 10 per connection; long-lived tails and SFTP use some, so short commands
# are capped below it rather than being refused by the server under load.
MAX_COMMANDS = 6
# Files up to this much base64 are written by the agent (one here-document line: its shell reads it byte by byte).
AGENT_WRITE_LIMIT = 32 * 1024
# Host figures and the process table, read once a round per host for all the entries that name it
# (hosts/shared_reads.py): rounds are 2 s apart and wake together, so a read is fresh for 1 s; an entry waits at
# most 1 s on another's read before reading through its own link.
HOST_PROBES: SharedReads[proc_probes.HostProbe] = SharedReads(fresh=1.0, wait=1.0)
PROCESS_TABLES: SharedReads[tuple[int, list[proc_probes.PidStat]]] = SharedReads(fresh=1.0, wait=1.0)


def _bytes(out: bytes | str | None) -> bytes:
    """A completed command's output; always bytes here (commands run with encoding=None)."""
    return out.encode() if isinstance(out, str) else bytes(out or b"")


def _fs_arg(path: str) -> str:
    """A path that find/head cannot take for an option."""
    return "./" + path if path.startswith("-") else path


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
        keepalive_interval: float = KEEPALIVE_EVERY,
        agent: bool = True,
    ) -> None:
        super().__init__(name)
        if ssh_config is None:
            default = os.path.expanduser("~/.ssh/config")
            ssh_config = default if os.path.isfile(default) else None
        else:
            ssh_config = os.path.expanduser(ssh_config)
        self.target = SshTarget(
            name=name,
            host=host,
            user=user,
            port=port,
            identity_file=os.path.expanduser(identity_file) if identity_file else None,
            accept_new_host_key=accept_new_host_key,
            known_hosts=os.path.expanduser(known_hosts or "~/.ssh/known_hosts"),
            ssh_config=ssh_config,
            connect_timeout=connect_timeout,
            keepalive_interval=keepalive_interval,
        )
        self._link = SshLink(self.target, lambda: (self.state, self.state_reason), self._set_state)
        self._commands = asyncio.Semaphore(MAX_COMMANDS)
        self.agent = AgentKeeper(name, enabled=agent)
        self._env: tuple[str, str | None] | None = None
        self._env_of = 0  # the connection (by count) _env was read on
        self._forwards = PortForwards(self._open_channel)
        self._prev_cpu: proc_probes.CpuSample | None = None
        self._spawned: tuple[int, ProcStart | None, float] | None = None  # (pid, its start, when) of the last spawn

    # ---- connection ----

    @property
    def has_sftp(self) -> bool | None:
        """Whether this connection's server offers SFTP; None until first needed."""
        return self._link.has_sftp

    @property
    def connects(self) -> int:
        """Successful connections so far (tests and the status line use it)."""
        return self._link.connects

    def round_trip(self) -> float:
        return self.agent.round_trip()

    def warm_forward(self, local_port: int) -> None:
        self._forwards.warm(local_port)

    def ask_early(self, argv: Sequence[str]) -> None:
        if argv:
            self.agent.early.append(shlex.join(argv))

    async def connect(self) -> None:
        """Connect now (an explicit request skips the backoff wait)."""
        await self._link.connect()

    async def ensure_connected(self) -> asyncssh.SSHClientConnection:
        """The live connection, connecting if needed; fails at once while the backoff runs."""
        return await self._link.ensure_connected()

    async def close(self) -> None:
        await self._link.stop_reconnecting()
        self._forwards.close()
        await self.agent.close()
        await self._link.close()

    # ---- commands ----

    async def _exec(
        self, command: str, *, input: bytes | None = None, timeout: float | None = 30, what: str = ""
    ) -> RunResult:
        conn = await self.ensure_connected()
        # stdin rides in the agent's request as a here-document where it can (one round trip, in no argv).
        here = "" if input is None else here_document(input)
        agent = await self.agent.get(conn) if here is not None else None
        if agent is not None and here is not None:
            with contextlib.suppress(AgentDown):  # not sent: the agent is gone, so one session for this one
                return await agent.run(command + here, timeout=timeout, what=what)
        async with self._commands:
            note(self.name, "session", what)
            proc: asyncssh.SSHClientProcess[bytes] | None = None
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
                    if proc is not None:
                        proc.terminate()  # OpenSSH >= 7.9 delivers it; then drop the channel either way
                        proc.close()
                raise TransportError(f"{self.name}: {what or 'command'} timed out after {timeout} s") from None
            except (asyncssh.Error, OSError) as e:
                raise TransportError(f"{self.name}: {what or 'command'} failed: {describe(e)}") from None
            finally:
                if proc is not None:
                    proc.close()
        if done.exit_status is None and done.exit_signal is None:
            raise TransportError(f"{self.name}: connection lost while running {what or 'a command'}")
        rc = done.returncode if done.returncode is not None else -1
        return RunResult(int(rc), _bytes(done.stdout), _bytes(done.stderr))

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
        env_files: Mapping[str, str] | None = None,
    ) -> int:
        # The new process's start time is read in the same request (its pid is the last line): the caller asks
        # for it next, and process_start then answers from here.
        spawn = spawn_args(argv, log_path, env, cwd, env_files)
        res = await self._exec(shlex.join(["sh", "-c", SPAWN_THEN_START_TIME, "sh", *spawn]), what=argv[0])
        head, sep, tail = res.stdout.partition(SPAWNED_MARK)
        pid = parse_spawn_output(self.name, RunResult(res.returncode, head, res.stderr))
        if sep:
            self._spawned = (pid, proc_probes.parse_start_lines(tail, live_only=False), time.monotonic())
        return pid

    async def pid_alive(self, pid: int) -> bool:
        res = await self.run(["cat", f"/proc/{int(pid)}/stat"])
        if not res.ok:
            return False
        try:
            return proc_probes.parse_pid_stat(res.stdout.decode(errors="replace")).state != "Z"
        except ValueError:
            return False

    async def process_start(self, pid: int) -> ProcStart | None:
        return await self._start(pid, live_only=False)

    async def live_start(self, pid: int) -> ProcStart | None:
        # One command instead of two: each remote command pays for the login shell (~100+ ms with a heavy .bashrc).
        return await self._start(pid, live_only=True)

    async def _start(self, pid: int, *, live_only: bool) -> ProcStart | None:
        spawned, self._spawned = self._spawned, None
        if spawned is not None and spawned[0] == pid and not live_only and time.monotonic() - spawned[2] < 5:
            return spawned[1]  # read with the spawn, moments ago
        res = await self._sh(START_TIME_SCRIPT, str(int(pid)), what="process start time")
        return proc_probes.parse_start_lines(res.stdout if res.ok else b"", live_only=live_only)

    async def process_argv(self, pid: int) -> tuple[str, ...] | None:
        res = await self._sh(ARGV_SCRIPT, str(int(pid)), what="process command line")
        if not res.ok or not res.stdout or len(res.stdout) >= ARGV_LIMIT:
            return None  # gone, a zombie (no command line), or cut: not one to compare
        return tuple(a.decode(errors="surrogateescape") for a in res.stdout.removesuffix(b"\0").split(b"\0"))

    async def kill(self, pid: int, sig: int) -> bool:
        res = await self.run(["kill", f"-{int(sig)}", str(int(pid))])
        return res.ok

    async def process_tree_rss(self, pid: int) -> int | None:
        page, stats = await PROCESS_TABLES.take(self.host_key, self, self._read_process_table)
        return proc_probes.tree_rss(stats, int(pid), page)

    async def _read_process_table(self) -> tuple[int, list[proc_probes.PidStat]]:
        res = await self._sh(TREE_SCRIPT, what="process list")
        first, _, rest = res.stdout.decode(errors="replace").partition("\n")
        try:
            page = int(first.strip())
        except ValueError:
            page = 4096
        return page, proc_probes.parse_pid_stats(rest)

    # ---- files ----

    def _missing(self, path: str) -> FileNotFoundError:
        return FileNotFoundError(errno.ENOENT, f"{self.name}: no such file", path)

    def _failed(self, what: str, path: str, res: RunResult) -> TransportError:
        detail = res.stderr.decode(errors="replace").strip() or f"exit code {res.returncode}"
        return TransportError(f"{self.name}: {what} {path}: {detail}")

    async def read_file(self, path: str) -> bytes:
        res = await self._sh(READ_SCRIPT, path, what="read")
        if res.returncode == MISSING:
            raise self._missing(path)
        if not res.ok:
            raise self._failed("cannot read", path, res)
        return res.stdout

    async def read_head(self, path: str, n: int) -> bytes:
        res = await self._sh(HEAD_SCRIPT, str(max(0, int(n))), _fs_arg(path), what="read")
        if res.returncode == MISSING:
            raise self._missing(path)
        if not res.ok:
            raise self._failed("cannot read", path, res)
        return res.stdout

    async def write_file_atomic(self, path: str, data: bytes, mode: int = 0o600) -> None:
        conn = await self.ensure_connected()
        b64 = base64.b64encode(data).decode("ascii")
        # A small file (a record, a key, a preset) goes through the agent in one round trip; SFTP costs about
        # eight on a fresh connection (subsystem start, open, write, close, chmod, rename).
        if len(b64) <= AGENT_WRITE_LIMIT and await self.agent.get(conn) is not None:
            return await self._write_by_script(path, b64, mode)
        sftp = await self._link.sftp(conn)
        if sftp is not None:
            note(self.name, "sftp", f"write {len(data)} bytes")
            try:
                await sftp_write(sftp, path, data, mode)
            except asyncssh.SFTPError as e:
                cause = sftp_cause(e.code, e.reason) or await self._diagnose(path, len(data))
                raise WriteFailed(self.name, path, cause) from None
            except (asyncssh.Error, OSError) as e:
                raise TransportError(f"{self.name}: cannot write {path}: {describe(e)}") from None
            return
        await self._write_by_script(path, b64, mode)

    async def _write_by_script(self, path: str, b64: str, mode: int) -> None:
        # The contents on stdin, never as an argument: `ps` shows arguments to every user of that machine.
        data = (b64 + "\n").encode("ascii")
        res = await self._sh(WRITE_SCRIPT, path, format(mode & 0o7777, "o"), input=data, what="write")
        if not res.ok:
            raise WriteFailed(self.name, path, stderr_cause(res.stderr.decode(errors="replace")))
        wrote = res.stdout.decode(errors="replace").rstrip("\n")
        if wrote != path:
            raise TransportError(f"{self.name}: writing {path}: the far side reported {wrote!r}")

    async def _diagnose(self, path: str, size: int) -> str:
        """Why a write failed when SFTP said only "Failure" (OpenSSH's answer to both ENOSPC and EROFS)."""
        try:
            res = await self._sh(DIAGNOSE_SCRIPT, posixpath.dirname(path) or ".", what="free space")
        except TransportError:
            return "the server said only 'Failure'"
        return diagnosed_cause(res.stdout.decode(errors="replace"), size)

    async def stat(self, path: str) -> FileInfo | None:
        res = await self._sh(STAT_SCRIPT, _fs_arg(path), what="stat")
        if res.returncode == MISSING:
            return None
        if not res.ok:
            raise self._failed("cannot stat", path, res)
        try:
            size, mtime, mode = res.stdout.decode().split()[:3]
            return FileInfo(path, int(size), float(mtime), int(mode, 8))
        except ValueError:
            raise self._failed("cannot stat", path, res) from None

    async def remove(self, path: str) -> None:
        res = await self.run(["rm", "-f", "--", path])
        if not res.ok:
            raise self._failed("cannot remove", path, res)

    async def rename(self, src: str, dst: str) -> None:
        res = await self._sh(RENAME_SCRIPT, src, dst, what="rename")
        if res.returncode == MISSING:
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
        if self._env is None or self._env_of != self._link.connects:
            res = await self._agent_environment() or await self._sh(ENV_SCRIPT, what="environment")
            if not res.ok:
                raise self._failed("cannot read", "$HOME", res)
            home, _, xdg = res.stdout.decode(errors="replace").partition("\n")
            if not home:
                raise TransportError(f"{self.name}: $HOME is not set on the remote side")
            self._env, self._env_of = (home, xdg or None), self._link.connects
        return self._env

    async def _agent_environment(self) -> RunResult | None:
        """ENV_SCRIPT's answer that the agent sends unasked when it starts (no round trip of its own)."""
        agent = await self.agent.get(await self.ensure_connected())
        if agent is None or agent.environment is None:
            return None
        try:
            ans = await within(asyncio.shield(agent.environment), 30)
        except (TransportError, TimeoutError):
            return None
        return RunResult(ans.rc, bytes(ans.out), bytes(ans.err))

    async def expand(self, path: str) -> str:
        if "~" not in path and "$" not in path:
            return path
        home, xdg = await self._remote_env()
        return expand_template(path, home, xdg)

    # ---- network ----

    async def free_port(self) -> int:
        res = await self._sh(PORTS_SCRIPT, what="port list")
        return pick_free_port(proc_probes.parse_proc_net_tcp(res.stdout.decode(errors="replace")))

    async def forward_port(self, remote_port: int) -> int:
        remote_port = int(remote_port)
        local = self._forwards.local_port(remote_port)
        if local is not None:
            return local
        await self.ensure_connected()
        return await self._forwards.listen(remote_port)

    async def _open_channel(self, remote_port: int) -> tuple[asyncssh.SSHReader[bytes], asyncssh.SSHWriter[bytes]]:
        conn = await self.ensure_connected()
        note(self.name, "channel", f"forward to port {remote_port}")
        return await conn.open_connection("127.0.0.1", remote_port)

    # ---- following and measuring ----

    async def tail_chunks(self, path: str, *, lines: int = 200) -> AsyncIterator[list[str]]:
        """Yields the last lines and follows (ssh/log_tail.py). Ends with TransportError if the link drops (the caller
        decides whether to tail again: lines written during the gap cannot be told apart from old ones)."""
        conn = await self.ensure_connected()
        # aclosing: closing this generator closes the tail's channel at once, not when the inner one is collected
        async with contextlib.aclosing(follow_log(conn, self.name, path, lines, lambda: self._link.closed)) as chunks:
            async for chunk in chunks:
                yield chunk

    async def host_stats(self) -> HostStats:
        p = await HOST_PROBES.take(self.host_key, self, self._read_host)
        # Against this entry's own previous sample, whichever entry of this host read this one.
        cpu = proc_probes.cpu_percent(self._prev_cpu, p.cpu)
        self._prev_cpu = p.cpu
        return HostStats(cpu_pct=cpu, mem_used=p.mem_used, mem_total=p.mem_total, load_avg=p.load_avg, gpus=p.gpus)

    async def _read_host(self) -> proc_probes.HostProbe:
        res = await self._sh(proc_probes.HOST_STATS_SCRIPT, what="host stats")
        try:
            return proc_probes.parse_host_probe(res.stdout.decode(errors="replace"))
        except ValueError as e:
            raise TransportError(f"{self.name}: unexpected host stats: {e}") from None

    @property
    def host_key(self) -> tuple[str, int | None]:
        """The host this entry reaches, as named: the entries that name the same host and port share its reads."""
        return self.target.host.lower(), self.target.port
