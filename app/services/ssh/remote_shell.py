"""One long-lived remote shell per ssh connection that runs llamaherd's short commands (host stats, process
checks, file reads), so an idle dashboard opens no ssh session after start-up and a command costs one round
trip instead of a channel open + exec + the user's login shell each time.

The remote half is a POSIX `sh` loop (ssh/remote_shell_script.py): nothing to install, no python needed over there.
Requests are pipelined (each gets an id; answers come back as they finish, in any order) and each one has its own
timeout, after which the agent is told to stop it. Answers are bounded (OUTPUT_LIMIT) and read through a bounded
parser. When the agent cannot start, or its channel ends, callers get AgentDown for requests not yet sent, and
the transport falls back to one ssh session per command (ssh/transport.py).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import shlex
import time
from collections.abc import Sequence

import asyncssh

from app.services.core.errors import TransportError
from app.services.core.host_types import RunResult
from app.services.core.waits import within
from app.services.ssh.remote_shell_script import AGENT_SCRIPT, MARK, OUTPUT_LIMIT
from app.services.ssh.remote_trace import note

MAX_STARTS = 3  # per connection: an agent that keeps dying is given up on until the next connection
START_TIMEOUT = 15.0  # the user's login shell runs once here (a heavy .bashrc takes seconds on a busy host)
MAX_IN_FLIGHT = 32  # requests running at once on the far side (each is a process there)
RTT_SAMPLES = 16  # the round trip is the quickest of the last this many requests (most are tiny)
EARLY_LIMIT = 16 * 1024  # bytes of early requests in the agent's command line (sshd takes 256 KiB packets)
EARLY_FRESH = 10.0  # s after the start an early answer is still taken for a request asked now
_MAX_HEADER = 256
_MAX_GREETING = 64 * 1024  # what a login shell may print before the agent's first line
_READ_CHUNK = 1 << 16


class AgentDown(TransportError):
    """The agent is not running; the request was not sent (safe to send another way)."""


class _Answer:
    __slots__ = ("_want", "err", "err_total", "out", "out_total", "rc")

    def __init__(self, rc: int, out: int, err: int, out_total: int, err_total: int) -> None:
        self.rc, self.out_total, self.err_total = rc, out_total, err_total
        self.out = bytearray()
        self.err = bytearray()
        self._want = (out, err)

    def feed(self, data: bytearray) -> int:
        """Take what belongs to this answer; returns how many bytes were taken."""
        taken = 0
        for buf, want in ((self.out, self._want[0]), (self.err, self._want[1])):
            room = want - len(buf)
            if room > 0:
                piece = data[taken : taken + room]
                buf += piece
                taken += len(piece)
                if len(buf) < want:
                    return taken
        return taken

    @property
    def complete(self) -> bool:
        return len(self.out) == self._want[0] and len(self.err) == self._want[1]


def parse_header(line: bytes) -> tuple[int, _Answer]:
    """`MARK id rc out err out_total err_total` -> (id, empty answer); ValueError when it is not one."""
    parts = line.decode("ascii", errors="replace").split()
    if len(parts) != 7 or parts[0] != MARK:
        raise ValueError(f"not an agent answer: {line[:80]!r}")
    rid, rc, out, err, out_total, err_total = (int(p) for p in parts[1:])
    if not (0 <= out <= OUTPUT_LIMIT and 0 <= err <= OUTPUT_LIMIT):
        raise ValueError(f"answer sizes out of bounds: {out}, {err}")
    return rid, _Answer(rc, out, err, out_total, err_total)


def request_text(rid: int, command: str) -> bytes:
    """`R id n` and the command's n lines."""
    if "\0" in command:
        raise ValueError("a command cannot hold a NUL byte")
    lines = command.split("\n")
    body = "".join(line + "\n" for line in lines)
    return f"R {rid} {len(lines)}\n{body}".encode("utf-8", errors="surrogateescape")


class RemoteAgent:
    """The agent on one connection. `start` it, `run` commands, `close` it; `alive` says whether it still runs."""

    def __init__(self, name: str, conn: asyncssh.SSHClientConnection) -> None:
        self.name = name
        self.conn = conn
        self.pid: int | None = None  # the remote shell's pid (tests and the bench look it up)
        self.requests = 0  # requests sent so far
        self._took: collections.deque[float] = collections.deque(maxlen=RTT_SAMPLES)
        self._proc: asyncssh.SSHClientProcess[bytes] | None = None
        self._reader: asyncio.Task[None] | None = None
        self._waiting: dict[int, asyncio.Future[_Answer]] = {}
        self._next_id = 0
        self._slots = asyncio.Semaphore(MAX_IN_FLIGHT)
        self._down: str | None = None
        # The answer to request 0, which the agent runs unasked at start: ENV_SCRIPT's output.
        self.environment: asyncio.Future[_Answer] | None = None
        self._early: dict[str, int] = {}  # command -> the id it was run under at start
        self._started = 0.0

    @property
    def round_trip(self) -> float | None:
        """The link's round trip as this agent measured it (plus a few ms of work on the far side), if known."""
        return min(self._took) if self._took else None

    @property
    def alive(self) -> bool:
        return self._down is None and self._proc is not None and not self.conn.is_closed()

    async def start(self, timeout: float = START_TIMEOUT, early: Sequence[str] = ()) -> None:
        """Open the session and wait for the agent's first line; AgentDown when it does not come. `early`
        commands are run at start (requests 1..n, in the command line): `run` of one of them takes that answer."""
        early = _bounded(early)
        cmd = shlex.join(["exec", "sh", "-c", AGENT_SCRIPT, "sh", *early])
        note(self.name, "session", "agent start" + (f" with {len(early)} early requests" if early else ""))
        t0 = time.monotonic()
        try:
            opened = self.conn.create_process(cmd, encoding=None, stderr=asyncssh.DEVNULL)
            proc = await within(opened, timeout)
            # Two round trips (channel open, exec) and the login shell's start: until a request has measured
            # one, half of it stands for the round trip (too long rather than too short, for timeouts).
            self._took.append((time.monotonic() - t0) / 2)
            self._proc = proc
            line, rest = await within(self._ready_line(proc), timeout)
        except (asyncssh.Error, OSError, TimeoutError, asyncio.IncompleteReadError, ValueError) as e:
            self._fail(f"the remote agent did not start: {type(e).__name__} {e}".strip())
            raise AgentDown(f"{self.name}: {self._down}") from None
        self.pid = int(line.split()[2])
        loop = asyncio.get_running_loop()
        self._waiting[0] = self.environment = loop.create_future()
        for command in early:  # ids 1..n, as the agent numbers its arguments
            self._next_id += 1
            self._waiting[self._next_id], self._early[command] = loop.create_future(), self._next_id
        for f in self._waiting.values():
            f.add_done_callback(lambda f: f.cancelled() or f.exception())  # nobody may ask for it
        self._started = time.monotonic()
        self._reader = asyncio.get_running_loop().create_task(self._read_answers(rest))

    @staticmethod
    async def _ready_line(proc: asyncssh.SSHClientProcess[bytes]) -> tuple[bytes, bytes]:
        """The agent's `ready` line and what came after it, past what the user's login shell may print first (a
        chatty .bashrc), reading at most _MAX_GREETING bytes."""
        buf, seen = b"", 0
        while True:
            chunk = await proc.stdout.read(4096)
            if not chunk:
                raise ValueError("its session ended at once")
            buf += chunk
            while b"\n" in buf:
                line, _, buf = buf.partition(b"\n")
                parts = line.decode("ascii", errors="replace").split()
                if len(parts) == 3 and parts[:2] == [MARK, "ready"] and parts[2].isdigit():
                    return line, buf
                seen += len(line) + 1
            if seen + len(buf) > _MAX_GREETING:
                raise ValueError(f"no ready line in the first {_MAX_GREETING} bytes")

    async def run(self, command: str, *, timeout: float | None, what: str) -> RunResult:
        """Run one command; AgentDown if it could not be sent, TransportError on timeout or loss."""
        async with self._slots:
            if not self.alive or self._proc is None:
                raise AgentDown(f"{self.name}: the remote agent is not running ({self._down or 'closed'})")
            early = self._early.pop(command, None)
            fut = self._waiting.get(early) if early is not None else None
            if early is not None and (fut is None or time.monotonic() - self._started > EARLY_FRESH):
                self._waiting.pop(early, None)
                early = fut = None  # asked too long ago to be the answer now
            if early is None:
                self._next_id += 1
            rid = early if early is not None else self._next_id
            note(self.name, "agent", what + (" (sent at start)" if early is not None else ""))
            self.requests += 1
            if fut is None:
                fut = self._waiting[rid] = asyncio.get_running_loop().create_future()
            try:
                try:
                    if early is None:
                        self._proc.stdin.write(request_text(rid, command))
                except (asyncssh.Error, OSError) as e:
                    self._fail(f"cannot send to the remote agent: {e}")
                    raise AgentDown(f"{self.name}: {self._down}") from None
                t0 = time.monotonic()
                try:
                    ans = await within(asyncio.shield(fut), timeout)  # a cancel is never lost (core/waits.py)
                    if early is None:  # an answer sent at start may have been here already: not a round trip
                        self._took.append(time.monotonic() - t0)
                except TimeoutError:
                    self._stop_request(rid)
                    raise TransportError(f"{self.name}: {what or 'command'} timed out after {timeout} s") from None
            finally:
                self._waiting.pop(rid, None)
        if ans.out_total > len(ans.out) or ans.err_total > len(ans.err):
            raise TransportError(
                f"{self.name}: {what or 'command'} wrote {max(ans.out_total, ans.err_total)} bytes, "
                f"over the {OUTPUT_LIMIT} byte limit"
            )
        return RunResult(ans.rc, bytes(ans.out), bytes(ans.err))

    def _stop_request(self, rid: int) -> None:
        if self._proc is not None and self.alive:
            with contextlib.suppress(asyncssh.Error, OSError):
                self._proc.stdin.write(f"K {rid}\n".encode())

    async def _read_answers(self, rest: bytes) -> None:
        assert self._proc is not None
        buf = bytearray(rest)
        current: tuple[int, _Answer] | None = None
        why = "its session ended"
        try:
            while True:
                while buf:
                    if current is None:
                        nl = buf.find(b"\n")
                        if nl < 0:
                            if len(buf) > _MAX_HEADER:
                                raise ValueError("an answer header too long")
                            break
                        current = parse_header(bytes(buf[:nl]))
                        del buf[: nl + 1]
                    rid, ans = current
                    del buf[: ans.feed(buf)]
                    if not ans.complete:
                        break
                    current = None
                    fut = self._waiting.get(rid)
                    if fut is not None and not fut.done():
                        fut.set_result(ans)
                data = await self._proc.stdout.read(_READ_CHUNK)
                if not data:
                    break
                buf += data
        except (asyncssh.Error, OSError) as e:
            why = f"its session failed: {e}"
        except ValueError as e:
            why = f"it sent something unexpected ({e})"
        except Exception as e:  # whatever ends the reader, no request may wait on it forever
            why = f"reading its answers failed: {type(e).__name__}: {e}"
        self._fail(why)

    def _fail(self, why: str) -> None:
        """Mark the agent down and fail every request waiting on it."""
        if self._down is None:
            self._down = why
        err = TransportError(f"{self.name}: connection lost while running a command ({why})")
        for fut in self._waiting.values():
            if not fut.done():
                fut.set_exception(err)
        if self._proc is not None:
            self._proc.close()

    async def close(self) -> None:
        self._fail("closed")
        task, self._reader = self._reader, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


def _bounded(early: Sequence[str]) -> list[str]:
    """The early commands that fit in the agent's command line (the rest go the usual way), each once."""
    out: list[str] = []
    size = 0
    for c in dict.fromkeys(early):
        size += len(c.encode("utf-8", errors="surrogateescape")) + 3
        if "\0" in c or size > EARLY_LIMIT:
            break
        out.append(c)
    return out


class AgentKeeper:
    """The agent of the current connection: started on first use and again after a reconnect (or after it died,
    up to MAX_STARTS times per connection). `get` gives None where it cannot run: the caller uses one ssh
    session per command instead. A start that fails is not retried on the same connection."""

    def __init__(self, name: str, enabled: bool = True) -> None:
        self.name = name
        self.enabled = enabled
        self.starts = 0  # agents started, over all connections (tests and the bench read it)
        self.fallback_reason = ""  # why the last start failed, if it did
        self._agent: RemoteAgent | None = None
        self._conn: asyncssh.SSHClientConnection | None = None
        self._tries = 0
        self._lock = asyncio.Lock()
        self._rtt = 0.0
        self.early: list[str] = []  # commands for the next agent start to run (Transport.ask_early)

    @property
    def agent(self) -> RemoteAgent | None:
        return self._agent

    def round_trip(self) -> float:
        """The last round trip measured on this machine's link, 0 until one is."""
        a = self._agent
        if a is not None and a.round_trip is not None:
            self._rtt = a.round_trip
        return self._rtt

    async def get(self, conn: asyncssh.SSHClientConnection) -> RemoteAgent | None:
        a = self._agent
        if a is not None and a.conn is conn and a.alive:
            return a
        if not self.enabled:
            return None
        async with self._lock:
            a = self._agent
            if a is not None and a.conn is conn and a.alive:
                return a
            if a is not None:
                self._agent = None
                await a.close()
            if self._conn is not conn:
                self._conn, self._tries = conn, 0
            if self._tries >= MAX_STARTS or conn.is_closed():
                return None
            self._tries += 1
            a = RemoteAgent(self.name, conn)
            early, self.early = self.early, []
            try:
                await a.start(early=early)
            except AgentDown as e:
                self._tries = MAX_STARTS
                self.fallback_reason = str(e)
                await a.close()
                return None
            self._agent, self.fallback_reason = a, ""
            self.starts += 1
            return a

    async def close(self) -> None:
        a, self._agent = self._agent, None
        if a is not None:
            await a.close()
