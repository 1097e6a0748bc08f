"""Following a log on another machine: `tail -F` on a channel of its own, read in bounded lines."""

from __future__ import annotations

import contextlib
import shlex
from collections.abc import AsyncGenerator, Callable

import asyncssh

from app.services.core.bounded import MAX_LOG_LINE, LineSplitter, log_text
from app.services.core.errors import TransportError
from app.services.hosts.shell_scripts import TAIL_CHUNK, TAIL_SCRIPT, TAIL_WINDOW
from app.services.ssh.host_keys import describe
from app.services.ssh.remote_trace import note


async def follow_log(
    conn: asyncssh.SSHClientConnection, name: str, path: str, lines: int, closed: Callable[[], bool]
) -> AsyncGenerator[list[str], None]:
    """The last `lines` lines of `path`, then each chunk of new ones. Ends with TransportError when the channel
    ends while the link is not being closed (`closed()` false).

    The tail has its own ssh channel, with its own flow-control window (TAIL_WINDOW): when we read slower than
    the log grows, that window fills and the remote `tail` blocks on its pipe, while the other channels of the
    connection (router events, commands) keep flowing, behind at most one window of log."""
    cmd = shlex.join(["sh", "-c", TAIL_SCRIPT, "sh", str(max(0, int(lines))), path])
    note(name, "session", "tail")
    try:
        proc = await conn.create_process(cmd, encoding=None, stderr=asyncssh.DEVNULL, window=TAIL_WINDOW)
    except (asyncssh.Error, OSError) as e:
        raise TransportError(f"{name}: cannot follow {path}: {describe(e)}") from None
    splitter = LineSplitter(MAX_LOG_LINE)  # never holds more than one bounded unfinished line
    try:
        while True:
            try:
                data = await proc.stdout.read(TAIL_CHUNK)
            except (asyncssh.Error, OSError) as e:
                raise TransportError(f"{name}: following {path} stopped: {describe(e)}") from None
            if not data:
                break
            done = [log_text(raw.removesuffix(b"\r"), cut) for raw, cut in splitter.feed(data)]
            if done:
                yield done
        if not closed():
            raise TransportError(f"{name}: following {path} stopped: the connection was lost")
    finally:
        with contextlib.suppress(Exception):
            proc.stdin.write_eof()  # the remote wrapper stops tail when its stdin closes
        proc.close()
