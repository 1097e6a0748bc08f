"""This machine as a Transport: subprocesses, psutil and plain file calls, each blocking call in a worker thread.

It starts processes with the same spawn script as the ssh side (hosts/transport.py), so a router started from either
side looks the same read from the other.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fnmatch
import os
import shutil
import socket
import tempfile
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import IO

import psutil

from app.services.core.backoff import Backoff
from app.services.core.bounded import MAX_LOG_LINE, LineSplitter, log_text
from app.services.core.errors import TransportError, WriteFailed
from app.services.core.host_types import Connection, FileInfo, GpuStats, HostStats, RunResult
from app.services.core.waits import within
from app.services.hosts import proc_probes
from app.services.hosts.last_lines import read_last_lines
from app.services.hosts.process_start import BOOT_ID_PATH, ProcStart, parse_boot_id
from app.services.hosts.process_tree import tree_rss
from app.services.hosts.transport import Transport, expand_template, parse_spawn_output, pick_free_port, spawn_args
from app.services.hosts.write_errors import oserror_cause

# A log is polled TAIL_FIRST after it last grew, the wait doubling while it stays quiet up to TAIL_IDLE_CAP: a
# busy log is read as promptly as before, an idle one costs ~1 poll a second, not 10 (5 managed routers' tails were
# 50 thread hops a second of an idle dashboard). The first line after a quiet spell waits at most TAIL_IDLE_CAP.
TAIL_FIRST = 0.1
TAIL_IDLE_CAP = 0.8
_sleep = asyncio.sleep  # a test steps the tail's waits through this


class _LocalFollower:
    """`tail -F` for a local file, one poll at a time (each poll runs in a worker thread)."""

    CHUNK = 1 << 20
    READ_BACK = 4 << 20  # the first lines come from at most this much of the file's end

    def __init__(self, path: str) -> None:
        self.path = path
        self.f: IO[bytes] | None = None
        self.ident: tuple[int, int] | None = None
        self.pos = 0
        self.lines = LineSplitter(MAX_LOG_LINE)  # a line that never ends is cut, not held

    def _open(self) -> bool:
        try:
            f = open(self.path, "rb")  # noqa: SIM115 - kept open across polls, closed in close()
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return False
        st = os.fstat(f.fileno())
        self.f, self.ident, self.pos = f, (st.st_dev, st.st_ino), 0
        self.lines = LineSplitter(MAX_LOG_LINE)
        return True

    def close(self) -> None:
        if self.f is not None:
            self.f.close()
            self.f = None

    def initial(self, lines: int) -> list[str]:
        """The last `lines` complete lines; leaves the position at the end of the file."""
        if not self._open():
            return []
        assert self.f is not None
        end = self.f.seek(0, os.SEEK_END)
        start, buf = end, b""
        # Read backwards in blocks until enough newlines are in hand.
        while start > 0 and buf.count(b"\n") <= lines and end - start < self.READ_BACK:
            step = min(65536, start)
            start -= step
            self.f.seek(start)
            buf = self.f.read(step) + buf
        self.pos = end
        self.f.seek(end)
        body, nl, partial = buf.rpartition(b"\n")
        overflow = [log_text(raw, cut) for raw, cut in self.lines.feed(partial)]  # an unfinished line over the limit
        if not nl:
            return overflow
        got = body.split(b"\n")
        if start > 0:
            got = got[1:]  # the first one is likely cut
        if lines <= 0:
            return overflow
        done = [log_text(x.removesuffix(b"\r")[:MAX_LOG_LINE], len(x) > MAX_LOG_LINE) for x in got[-lines:]]
        return done + overflow

    def poll(self) -> list[str]:
        out: list[str] = []
        try:
            st: os.stat_result | None = os.stat(self.path)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            st = None
        if self.f is not None and (st is None or (st.st_dev, st.st_ino) != self.ident):
            # Replaced or removed: finish what the old file still holds, then let go of it.
            out += self._read_new()
            self.close()
        if self.f is None and (st is None or not self._open()):
            return out
        assert self.f is not None
        size = os.fstat(self.f.fileno()).st_size
        if size < self.pos:  # truncated in place: start over from its beginning, like tail -F
            self.f.seek(0)
            self.pos, self.lines = 0, LineSplitter(MAX_LOG_LINE)
        return out + self._read_new()

    def _read_new(self) -> list[str]:
        assert self.f is not None
        self.f.seek(self.pos)
        data = self.f.read(self.CHUNK)
        if not data:
            return []
        self.pos += len(data)
        return [log_text(raw, cut) for raw, cut in self.lines.feed(data)]


class LocalTransport(Transport):
    """This machine."""

    is_local = True

    def __init__(self, name: str = "local") -> None:
        super().__init__(name)
        self._set_state(Connection.LOCAL)
        self._prev_cpu: proc_probes.CpuSample | None = None

    async def connect(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def run(self, argv: Sequence[str], *, input: bytes | None = None, timeout: float | None = 30) -> RunResult:
        if not argv:
            raise ValueError("run needs a program")
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE if input is not None else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
        except (FileNotFoundError, PermissionError, NotADirectoryError) as e:
            # The same answer a shell on a remote machine gives, so callers need one check.
            return RunResult(127, b"", f"{argv[0]}: {e.strerror}\n".encode())
        try:
            out, err = await within(proc.communicate(input), timeout)  # a cancel is never lost (core/waits.py)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
            raise TransportError(f"{self.name}: {argv[0]} timed out after {timeout} s") from None
        except asyncio.CancelledError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            raise
        rc = proc.returncode if proc.returncode is not None else -1
        return RunResult(rc, out, err)

    async def spawn_detached(
        self,
        argv: Sequence[str],
        *,
        log_path: str,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        env_files: Mapping[str, str] | None = None,
    ) -> int:
        res = await self.run(spawn_args(argv, log_path, env, cwd, env_files), timeout=30)
        return parse_spawn_output(self.name, res)

    async def pid_alive(self, pid: int) -> bool:
        try:
            # A zombie is dead: where init does not reap (some containers), it keeps the pid forever.
            return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
        except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError):
            return False

    async def process_start(self, pid: int) -> ProcStart | None:
        if _boot_id():  # Linux: read as the remote side is, from one read of /proc/PID/stat
            try:
                st = proc_probes.parse_pid_stat(_read_text(f"/proc/{int(pid)}/stat"))
                btime = proc_probes.parse_btime(_read_text("/proc/stat"))
            except (OSError, ValueError):
                return None
            return proc_probes.proc_start(st.starttime, _CLK_TCK, btime, _boot_id())
        try:
            # psutil computes starttime / CLK_TCK + btime, exactly what the remote side parses.
            return ProcStart(round(float(psutil.Process(pid).create_time()), 2))
        except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError):
            return None

    async def process_argv(self, pid: int) -> tuple[str, ...] | None:
        try:
            return tuple(psutil.Process(pid).cmdline())
        except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError):
            return None

    async def kill(self, pid: int, sig: int) -> bool:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    async def process_tree_rss(self, pid: int) -> int | None:
        return await asyncio.to_thread(tree_rss, pid)  # one process-table scan per round for all local machines

    # ---- files ----

    async def read_file(self, path: str) -> bytes:
        def read() -> bytes:
            with open(path, "rb") as f:
                return f.read()

        return await asyncio.to_thread(read)

    async def last_lines(self, path: str, n: int, width: int) -> list[bytes] | None:
        try:
            lines = await asyncio.to_thread(read_last_lines, path, n, width)
        except OSError:
            return None
        return await super().last_lines(path, n, width) if lines is None else lines

    async def read_head(self, path: str, n: int) -> bytes:
        def read() -> bytes:
            with open(path, "rb") as f:
                return f.read(max(0, n))

        return await asyncio.to_thread(read)

    async def write_file_atomic(self, path: str, data: bytes, mode: int = 0o600) -> None:
        def write() -> None:
            parent = os.path.dirname(path) or "."
            os.makedirs(parent, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=parent, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                    os.fchmod(f.fileno(), mode)
                os.replace(tmp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise

        try:
            await asyncio.to_thread(write)
        except OSError as e:  # a full disk, a read-only mount...: a message, not a traceback
            raise WriteFailed(self.name, path, oserror_cause(e)) from None

    async def stat(self, path: str) -> FileInfo | None:
        try:
            st = await asyncio.to_thread(os.stat, path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        return FileInfo(path, st.st_size, st.st_mtime, st.st_mode & 0o7777)

    async def remove(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            await asyncio.to_thread(os.unlink, path)

    async def rename(self, src: str, dst: str) -> None:
        await asyncio.to_thread(os.replace, src, dst)

    async def list_files(self, dirs: Sequence[str], pattern: str = "*.gguf", max_depth: int = 2) -> list[FileInfo]:
        home, xdg = _local_env()
        roots = [expand_template(d, home, xdg).rstrip("/") or "/" for d in dirs]
        return await asyncio.to_thread(_walk, roots, pattern, max_depth)

    async def expand(self, path: str) -> str:
        return expand_template(path, *_local_env())

    # ---- network ----

    async def free_port(self) -> int:
        used: set[int] = set()
        for f in ("/proc/net/tcp", "/proc/net/tcp6"):
            with contextlib.suppress(OSError):
                used |= proc_probes.parse_proc_net_tcp(await asyncio.to_thread(_read_text, f))
        for _ in range(50):
            port = pick_free_port(used)
            # Proving it by binding catches what /proc did not show (and non-Linux systems).
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError as e:
                    if e.errno != errno.EADDRINUSE:
                        raise
                    used.add(port)
                    continue
            return port
        raise TransportError(f"{self.name}: no free port found")

    async def forward_port(self, remote_port: int) -> int:
        return remote_port

    # ---- following and measuring ----

    async def tail_chunks(self, path: str, *, lines: int = 200) -> AsyncIterator[list[str]]:
        follower = _LocalFollower(path)
        try:
            first = await asyncio.to_thread(follower.initial, lines)
            if first:
                yield first
            quiet = Backoff(TAIL_FIRST, TAIL_IDLE_CAP)
            while True:
                got = await asyncio.to_thread(follower.poll)
                if got:
                    quiet.reset()
                    yield got
                else:
                    await _sleep(quiet.next())
        finally:
            follower.close()

    async def host_stats(self) -> HostStats:
        now = _clock()
        global _host_read
        if _host_read is None or not 0 <= now - _host_read[0] <= HOST_READ_TTL:
            _host_read = (now, _read_host())
        _, (cur, mem_used, mem_total, la) = _host_read
        # Our own previous sample (not psutil.cpu_percent's process-wide one), computed the way the remote is.
        cpu = proc_probes.cpu_percent(self._prev_cpu, cur)
        self._prev_cpu = cur
        gpus: tuple[GpuStats, ...] = ()
        if _has_nvidia_smi(now):
            try:
                res = await self.run(list(proc_probes.NVIDIA_SMI_QUERY), timeout=5)
            except TransportError:
                res = None  # a wedged driver: show no GPUs rather than no stats
            if res is not None and res.ok:
                gpus = proc_probes.parse_nvidia_smi(res.stdout.decode(errors="replace"))
        return HostStats(
            cpu_pct=cpu,
            mem_used=mem_used,
            mem_total=mem_total,
            load_avg=la,
            gpus=gpus,
        )


# Every local machine is this host, and the machines' stats rounds wake together (machine/stats_rounds.py): one read of
# /proc/stat and /proc/meminfo serves them all (5 managed routers here were 5 reads a round). Each machine still
# works out its CPU % from its own previous sample.
HOST_READ_TTL = 0.25
_clock = time.monotonic  # a test steps the rounds through this
_host_read: tuple[float, tuple[proc_probes.CpuSample, int, int, tuple[float, float, float]]] | None = None


_which_at: tuple[float, str, bool] | None = None
# Looking along PATH every round was a tenth of an idle round's cost: once a minute, or when PATH changed.
WHICH_TTL = 60.0


def _has_nvidia_smi(now: float) -> bool:
    global _which_at
    path = os.environ.get("PATH", "")
    if _which_at is None or _which_at[1] != path or not 0 <= now - _which_at[0] <= WHICH_TTL:
        _which_at = (now, path, shutil.which("nvidia-smi") is not None)
    return _which_at[2]


def _read_host() -> tuple[proc_probes.CpuSample, int, int, tuple[float, float, float]]:
    """This host's CPU times as a sample, memory used and total, load averages."""
    t = psutil.cpu_times()
    idle = t.idle + getattr(t, "iowait", 0.0)
    total = sum(getattr(t, f, 0.0) for f in ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"))
    vm = psutil.virtual_memory()
    la = os.getloadavg()
    sample = proc_probes.CpuSample(round(total * 100), round(idle * 100))
    return sample, int(vm.total - vm.available), int(vm.total), (la[0], la[1], la[2])


_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_boot: str | None = None


def _boot_id() -> str:
    """This boot's id ("" without /proc), read once: it cannot change while this process lives."""
    global _boot
    if _boot is None:
        try:
            _boot = parse_boot_id(_read_text(BOOT_ID_PATH))
        except OSError:
            _boot = ""
    return _boot


def _local_env() -> tuple[str, str | None]:
    """$HOME (the password database when unset, as a shell would) and $XDG_STATE_HOME here."""
    return os.path.expanduser("~"), os.environ.get("XDG_STATE_HOME")


def _read_text(path: str) -> str:
    with open(path, encoding="ascii", errors="replace") as f:
        return f.read()


def _walk(roots: Sequence[str], pattern: str, max_depth: int) -> list[FileInfo]:
    """What `find -L ROOTS -maxdepth N -type f -name PATTERN` lists, deduplicated and sorted by path."""
    found: dict[str, FileInfo] = {}
    for root in roots:
        seen: set[tuple[int, int]] = set()
        todo: list[tuple[str, int]] = [(root, 1)]
        while todo:
            d, depth = todo.pop()
            try:
                st = os.stat(d)
                if (st.st_dev, st.st_ino) in seen:  # a symlink loop
                    continue
                seen.add((st.st_dev, st.st_ino))
                entries = list(os.scandir(d))
            except OSError:
                continue
            for e in entries:
                try:
                    if e.is_dir(follow_symlinks=True):
                        if depth < max_depth:
                            todo.append((e.path, depth + 1))
                    elif e.is_file(follow_symlinks=True) and fnmatch.fnmatchcase(e.name, pattern):
                        fst = e.stat(follow_symlinks=True)
                        found[e.path] = FileInfo(e.path, fst.st_size, fst.st_mtime)
                except OSError:
                    continue
    return [found[k] for k in sorted(found)]
