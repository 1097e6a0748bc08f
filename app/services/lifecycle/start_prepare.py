"""Over ssh, a fresh start's second request (old record removed, key written, port list, log and preset looked at)
folded into its first (state directory, start lock, look): one round trip instead of two.

What the second request does depends on the look taken once the lock is held, which comes back only with the
answer. But a start only gets that far when the look just before (outside the lock) found no live router; if
the record and the key file are still what that look saw, the look inside the lock would find the same and the
start would go on the same way. So the request is sent with what that look saw and the key it led to: the far
side compares, and only when both are unchanged removes the record and writes the key. Otherwise it changes
nothing and the start goes on the usual way from the look inside the lock. The port list and the stats are only
read, so they come either way.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

from app.services.core.host_types import FileInfo
from app.services.hosts import proc_probes
from app.services.hosts.shell_scripts import STAT_SCRIPT, WRITE_SCRIPT
from app.services.lifecycle.look_request import KEY_READ_LIMIT, Look

PREPARED_MARK = b"@@llamaherd-prepared"
DONE, CHANGED, KEY_NOT_WRITTEN = 0, 1, 2
# Appended after THEN_LOOK (whose parameters "sh", router dir, key file name are left): $1 the record as the first
# look saw it (base64; "-": there was none), $2 WRITE_SCRIPT, $3 the key file, $4 the record, $5 the log, $6 the
# preset, $7 STAT_SCRIPT. stdin: the key file as the first look saw it (its first KEY_READ_LIMIT bytes, base64; "-":
# there was none), then the key to write (base64). The key travels on stdin only, never as an argument, which `ps`
# shows every user of the serving machine; printf is the shell's own. Output after the mark:
# DONE/CHANGED/KEY_NOT_WRITTEN, the log's stat line, the preset's (empty lines when missing), /proc/net/tcp and tcp6.
# Command substitution drops trailing newlines on both sides of each comparison, as it did in the look.
THEN_PREPARE = f"""
shift 3
IFS= read -r ks || ks=
IFS= read -r kn || kn=
printf '\\n%s\\n' '{PREPARED_MARK.decode()}'
if [ "$1" = - ]; then [ ! -e "$4" ]; else [ -e "$4" ] && [ "$(cat -- "$4")" = "$(printf %s "$1" | base64 -d)" ]; fi &&
if [ "$ks" = - ]; then [ ! -e "$3" ]; else [ -r "$3" ] &&
  [ "$(head -c {KEY_READ_LIMIT} -- "$3")" = "$(printf %s "$ks" | base64 -d)" ]; fi
if [ "$?" -ne 0 ]; then echo {CHANGED}
elif [ -n "$kn" ] && rm -f -- "$4" && printf '%s\\n' "$kn" | sh -c "$2" sh "$3" 600 >/dev/null; then echo {DONE}
else echo {KEY_NOT_WRITTEN}; fi
sh -c "$7" sh "$5" 2>/dev/null || echo
sh -c "$7" sh "$6" 2>/dev/null || echo
cat /proc/net/tcp /proc/net/tcp6 2>/dev/null
exit 0
"""


@dataclass(frozen=True)
class Prepared:
    status: int  # DONE, CHANGED or KEY_NOT_WRITTEN
    log: FileInfo | None
    preset: FileInfo | None
    used_ports: set[int]


def _b64(data: bytes | None) -> str:
    return "-" if data is None else base64.b64encode(data).decode("ascii")


def prepare_request(seen: Look, key: str, key_path: str, record: str, log: str, preset: str) -> tuple[list[str], bytes]:
    """THEN_PREPARE's parameters and stdin, from the look `seen` (one that could read the key file) and the key it
    led to."""
    kept = seen.key_file if seen.key_exists else None
    stdin = f"{_b64(kept)}\n{_b64((key + chr(10)).encode())}\n".encode("ascii")
    return [_b64(seen.record), WRITE_SCRIPT, key_path, record, log, preset, STAT_SCRIPT], stdin


def _stat(path: str, line: bytes) -> FileInfo | None:
    try:
        size, mtime, mode = line.decode().split()[:3]
        return FileInfo(path, int(size), float(mtime), int(mode, 8))
    except ValueError:
        return None


def split_prepared(out: bytes, log: str, preset: str) -> tuple[bytes, Prepared | None]:
    """(the look's part of the answer, what the preparation did), None when that part is not one."""
    head, sep, tail = out.rpartition(b"\n" + PREPARED_MARK + b"\n")
    if not sep:
        return out, None
    status, log_line, preset_line, ports = [*tail.split(b"\n", 3), b"", b"", b""][:4]
    try:
        code = int(status)
    except ValueError:
        return head, None
    used = proc_probes.parse_proc_net_tcp(ports.decode(errors="replace"))
    return head, Prepared(code, _stat(log, log_line), _stat(preset, preset_line), used)
