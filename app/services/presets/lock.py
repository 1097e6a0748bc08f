"""One preset writer at a time, across processes: an exclusive lock on the preset's directory, taken on the
machine that serves the file.

Two `llamaherd preset set` on one file once both checked the file, both found it unchanged and both wrote: one
edit was gone and both said "wrote". The check and the write now happen inside this lock, so of two writers the
second either sees the first's edit (and builds on it) or is refused with the conflict.

The lock is flock(2) on the directory, not on the file: the file is replaced by a rename on every write, so a lock
on it would be a lock on a file nobody opens again. A directory lock needs no lock file (nothing to clean up, works
where only the preset itself is writable) and the kernel drops it when its holder dies, so a killed llamaherd or a
lost ssh link never leaves it behind. Locally it is `fcntl.flock`; on an ssh machine a small remote process holds
`flock` (util-linux) until our side closes its stdin (sshd closes it too when the link drops). Both are the same
kernel lock, so a local and a remote llamaherd exclude each other. Where the remote side has no `flock` program,
a lock directory stands in (`mkdir` is atomic), removed when the holder ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import posixpath
import shlex
from collections.abc import AsyncIterator
from typing import Any

from app.services.core.errors import TransportError
from app.services.core.waits import within
from app.services.hosts.transport import Transport
from app.services.hosts.write_errors import oserror_cause, stderr_cause
from app.services.ssh.remote_trace import note

LOCK_TIMEOUT = 30.0
_MISSING = 44
_BUSY = 75

# $1 directory, $2 seconds to wait, $3 "1" to create the directory first. Prints "locked" once held and keeps the
# lock until its stdin closes.
_HOLD_SCRIPT = f"""d=$1; t=$2
if [ "$3" = 1 ]; then mkdir -p -- "$d" || exit 1; fi
[ -d "$d" ] || exit {_MISSING}
if command -v flock >/dev/null 2>&1; then
  exec flock -x -w "$t" -E {_BUSY} "$d" sh -c 'echo locked; exec cat >/dev/null'
fi
l="$d/.llamaherd-lock"; n=0
until mkdir -- "$l" 2>/dev/null; do
  [ -d "$d" ] || exit {_MISSING}
  n=$((n + 1)); [ "$n" -gt "$((t * 5))" ] && exit {_BUSY}
  sleep 0.2 2>/dev/null || sleep 1
done
trap 'rmdir -- "$l"' EXIT
trap 'exit 1' HUP INT TERM
echo locked
cat >/dev/null
"""


class PresetLockError(TransportError):
    """The preset's directory could not be locked: it is gone, unreadable, or another writer held it too long."""


def _gone(where: str, path: str, folder: str) -> str:
    return f"{where}: cannot write {path}: its directory {folder} no longer exists; nothing was written"


def _busy_message(where: str, folder: str, timeout: float) -> str:
    return f"{where}: another llamaherd has been writing in {folder} for over {timeout:.0f} s; nothing was written"


@contextlib.asynccontextmanager
async def preset_lock(
    transport: Transport, path: str, *, create_dir: bool, timeout: float = LOCK_TIMEOUT
) -> AsyncIterator[None]:
    """Hold the lock of `path`'s directory on `transport`'s machine for the body of the `with`.

    `create_dir` makes the directory first (a new preset); without it a directory that has vanished is an error
    naming it, rather than silently made again under an edit that was read from the old one.
    """
    folder = posixpath.dirname(path) or "."
    if transport.is_local:
        async with _local_lock(transport.name, path, folder, create_dir, timeout):
            yield
    else:
        async with _remote_lock(transport, path, folder, create_dir, timeout):
            yield


@contextlib.asynccontextmanager
async def _local_lock(where: str, path: str, folder: str, create_dir: bool, timeout: float) -> AsyncIterator[None]:
    def open_dir() -> int:
        if create_dir:
            os.makedirs(folder, exist_ok=True)
        return os.open(folder, os.O_RDONLY | os.O_DIRECTORY)

    try:
        fd = await asyncio.to_thread(open_dir)
    except FileNotFoundError:
        raise PresetLockError(_gone(where, path, folder)) from None
    except OSError as e:
        raise PresetLockError(f"{where}: cannot write {path}: {oserror_cause(e)} (locking {folder})") from None
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        delay = 0.005
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # never blocks: the event loop keeps running
                break
            except BlockingIOError:
                if loop.time() >= deadline:
                    raise PresetLockError(_busy_message(where, folder, timeout)) from None
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.05)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


@contextlib.asynccontextmanager
async def _remote_lock(
    transport: Transport, path: str, folder: str, create_dir: bool, timeout: float
) -> AsyncIterator[None]:
    ensure = getattr(transport, "ensure_connected", None)
    if ensure is None:  # pragma: no cover - every remote transport has it
        raise PresetLockError(f"{transport.name}: cannot lock {folder} on this kind of machine")
    conn: Any = await ensure()
    argv = ["sh", "-c", _HOLD_SCRIPT, "sh", folder, str(max(1, round(timeout))), "1" if create_dir else "0"]
    note(transport.name, "session", "preset lock")
    try:
        proc: Any = await conn.create_process(shlex.join(argv), encoding=None)
    except Exception as e:  # asyncssh.Error or OSError: the channel could not be opened
        raise PresetLockError(f"{transport.name}: cannot lock {folder}: {e or type(e).__name__}") from None
    try:
        try:
            line = await within(proc.stdout.readline(), timeout + 10)
        except TimeoutError:
            raise PresetLockError(_busy_message(transport.name, folder, timeout)) from None
        except Exception as e:
            raise PresetLockError(f"{transport.name}: lost the link while locking {folder}: {e}") from None
        if line.strip() != b"locked":
            with contextlib.suppress(Exception):
                await within(proc.wait(), 5)
            code = proc.exit_status
            if code == _MISSING:
                msg = _gone(transport.name, path, folder)
            elif code == _BUSY:
                msg = _busy_message(transport.name, folder, timeout)
            else:
                raw = b""
                with contextlib.suppress(Exception):
                    raw = await within(proc.stderr.read(4096), 1)
                detail = raw.decode(errors="replace").strip().splitlines()
                why = detail[-1] if detail else f"exit code {code}"
                msg = f"{transport.name}: cannot write {path}: {stderr_cause(why)} (locking {folder})"
            raise PresetLockError(msg)
        yield
    finally:
        # The holder ends when its stdin closes, and the lock goes with it: not waited for (a round trip). The
        # edit's writes were answered before this, and a next writer's flock waits until the holder is gone.
        with contextlib.suppress(Exception):
            proc.stdin.write_eof()
        proc.close()
