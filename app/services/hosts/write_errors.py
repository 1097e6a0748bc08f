"""Why a write failed, in a few words, whichever way the file was written (locally, SFTP, base64 over a shell).

A full disk once gave a 40-line traceback locally and the single word "Failure" over SFTP. Each path now ends in
WriteFailed naming the file and one of the causes below.
"""

from __future__ import annotations

import errno
import os
import re

_CAUSES: dict[int, str] = {
    errno.ENOSPC: "no space left on device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "read-only file system",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.ENOENT: "its directory no longer exists",
    errno.ENOTDIR: "a part of its path is not a directory",
    errno.EISDIR: "it is a directory",
    errno.EIO: "input/output error",
    errno.ENAMETOOLONG: "file name too long",
}

# SFTP status codes (draft-ietf-secsh-filexfer). OpenSSH's server speaks version 3 and reports ENOSPC and EROFS
# both as plain FX_FAILURE, which is why a Failure is followed by a look at the far side (DIAGNOSE_SCRIPT).
SFTP_FAILURE = 4
_SFTP_CAUSES: dict[int, str] = {
    2: _CAUSES[errno.ENOENT],  # no such file
    3: _CAUSES[errno.EACCES],  # permission denied
    6: "no connection",
    7: "the connection was lost",
    10: _CAUSES[errno.ENOENT],  # no such path
    12: _CAUSES[errno.EROFS],  # write protect
    14: _CAUSES[errno.ENOSPC],  # no space on file system
    15: _CAUSES[errno.EDQUOT],  # quota exceeded
    19: _CAUSES[errno.ENOTDIR],  # not a directory
    24: _CAUSES[errno.EISDIR],  # file is a directory
}

# $1 the file's directory. Free space (POSIX df, KiB) and whether a file can be made there at all (mktemp's own
# words when not: "Read-only file system", "Permission denied", ...).
DIAGNOSE_SCRIPT = """d=$1
printf 'avail=%s\\n' "$(df -Pk -- "$d" 2>/dev/null | awk 'NR==2 {print $4}')"
if t=$(mktemp "$d/.llamaherd-probe.XXXXXX" 2>&1); then rm -f -- "$t"; echo "create=ok"
else printf 'create=%s\\n' "$t" | tr '\\n' ' '; echo; fi
"""


def oserror_cause(e: OSError) -> str:
    if e.errno in _CAUSES:
        return _CAUSES[e.errno]
    return (e.strerror or type(e).__name__).lower()


def sftp_cause(code: int, reason: str) -> str | None:
    """The cause for an SFTP status, or None for FX_FAILURE and anything else that needs a look."""
    if code in _SFTP_CAUSES:
        return _SFTP_CAUSES[code]
    if code == SFTP_FAILURE:
        return None
    return reason.strip().lower() or None


# The far side's messages (glibc's strerror wording, as sh, mktemp and base64 print them).
_PHRASES = [(os.strerror(n).lower(), cause) for n, cause in _CAUSES.items()]


def stderr_cause(text: str) -> str:
    """The cause a shell's error output names, or its last line when it names none we know."""
    low = text.lower()
    for phrase, cause in _PHRASES:
        if phrase in low:
            return cause
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return "the far side gave no reason"
    # "sh: 1: cannot create /x: Some reason" -> "some reason"
    last = re.split(r":\s+", lines[-1])[-1]
    return last[:200].lower()


def diagnosed_cause(output: str, need_bytes: int) -> str:
    """The cause from DIAGNOSE_SCRIPT's output, for a write that failed without saying why."""
    avail = create = ""
    for line in output.splitlines():
        key, _, value = line.partition("=")
        if key == "avail":
            avail = value.strip()
        elif key == "create":
            create = value.strip()
    if avail.isdigit() and int(avail) * 1024 < need_bytes + 4096:
        return f"{_CAUSES[errno.ENOSPC]} ({int(avail)} KiB free)"
    if create and create != "ok":
        return stderr_cause(create)
    return "the server said only 'Failure' (free space and permissions look fine)"
