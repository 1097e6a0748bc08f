"""An opt-in record of every remote operation a process makes over ssh, to count a command's round trips.

Set LLAMAHERD_TRACE_REMOTE to a file path: each connection set-up, agent request, ssh session, SFTP operation and
forwarded channel is appended there as one line `<monotonic s> <machine> <kind> <what>` (the file is 0600).
Unset (the normal case) it costs one environment lookup per operation. bench/remote_rtt.py reads it.
"""

from __future__ import annotations

import os
import time

TRACE_ENV = "LLAMAHERD_TRACE_REMOTE"


def note(machine: str, kind: str, what: str = "") -> None:
    path = os.environ.get(TRACE_ENV)
    if not path:
        return
    line = f"{time.monotonic():.3f} {machine} {kind} {' '.join(what.split())[:120]}\n"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    except OSError:
        return
    try:
        os.write(fd, line.encode("utf-8", errors="replace"))
    finally:
        os.close(fd)
