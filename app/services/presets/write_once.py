"""A preset's backup and its new text in one request over ssh, instead of one after the other (a round trip each).

The far side writes the backup first and the preset only once the backup is written, as PresetStore.apply does
in two steps; both through the same script as any small remote write (WRITE_SCRIPT: a temporary file, then a
rename). Used for small files only: both texts ride, base64, on the request's stdin (a here-document inside the
agent's request: ssh/here_document.py), never as arguments, which `ps` would show to every user of that machine.
"""

from __future__ import annotations

import base64

from app.services.core.errors import TransportError, WriteFailed
from app.services.hosts.shell_scripts import WRITE_SCRIPT
from app.services.hosts.transport import Transport
from app.services.hosts.write_errors import stderr_cause

ONE_REQUEST_LIMIT = 24 * 1024  # bytes of base64 for both texts
_BACKUP_FAILED, _PRESET_FAILED = 11, 12
# $1 WRITE_SCRIPT; $2 backup path; $3 preset path, $4 its mode (octal). stdin: the backup's base64 line, then the
# preset's (printf is the shell's own: no argv holds them).
_BACKUP_THEN_WRITE = (
    "IFS= read -r o; IFS= read -r n; "
    f'printf "%s\\n" "$o" | sh -c "$1" sh "$2" 600 >/dev/null || exit {_BACKUP_FAILED}; '
    f'printf "%s\\n" "$n" | sh -c "$1" sh "$3" "$4" >/dev/null || exit {_PRESET_FAILED}'
)


def fits(old: bytes, new: bytes) -> bool:
    return (len(old) + len(new)) * 4 // 3 + 8 <= ONE_REQUEST_LIMIT


async def backup_then_write(t: Transport, backup: str, old: bytes, path: str, new: bytes, mode: int) -> None:
    """WriteFailed naming the file that could not be written (the backup: then the preset is untouched)."""
    b64_old, b64_new = base64.b64encode(old).decode("ascii"), base64.b64encode(new).decode("ascii")
    argv = ["sh", "-c", _BACKUP_THEN_WRITE, "sh", WRITE_SCRIPT, backup, path, format(mode & 0o7777, "o")]
    r = await t.run(argv, input=f"{b64_old}\n{b64_new}\n".encode("ascii"))
    if r.ok:
        return
    cause = stderr_cause(r.stderr.decode(errors="replace"))
    if r.returncode == _BACKUP_FAILED:
        raise WriteFailed(t.name, backup, cause)
    if r.returncode == _PRESET_FAILED:
        raise WriteFailed(t.name, path, cause)
    raise TransportError(f"{t.name}: writing {path}: exit code {r.returncode}: {cause}")
