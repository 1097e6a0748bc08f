"""The causes a failed write is reported with, from each way of writing."""

from __future__ import annotations

import errno

from app.services.hosts.write_errors import diagnosed_cause, oserror_cause, sftp_cause, stderr_cause


def test_local_errnos_name_their_cause() -> None:
    assert oserror_cause(OSError(errno.ENOSPC, "No space left on device")) == "no space left on device"
    assert oserror_cause(OSError(errno.EROFS, "Read-only file system")) == "read-only file system"
    assert oserror_cause(OSError(errno.EACCES, "Permission denied")) == "permission denied"
    assert oserror_cause(OSError(errno.ENOENT, "x")) == "its directory no longer exists"


def test_sftp_codes_map_and_plain_failure_asks_for_a_look() -> None:
    assert sftp_cause(3, "Permission denied") == "permission denied"
    assert sftp_cause(14, "") == "no space left on device"
    assert sftp_cause(12, "") == "read-only file system"
    assert sftp_cause(4, "Failure") is None


def test_shell_error_output_is_read_for_its_cause() -> None:
    assert stderr_cause("base64: write error: No space left on device\n") == "no space left on device"
    assert stderr_cause("mktemp: failed to create file via template '/x/.l.XX': Read-only file system") == (
        "read-only file system"
    )
    assert stderr_cause("sh: 1: something odd: Weird thing\n") == "weird thing"
    assert stderr_cause("") == "the far side gave no reason"


def test_a_bare_failure_is_diagnosed_from_free_space_then_a_probe() -> None:
    assert diagnosed_cause("avail=0\ncreate=ok\n", 100) == "no space left on device (0 KiB free)"
    ro = "avail=500\ncreate=mktemp: failed to create file via template 'x': Read-only file system\n"
    assert diagnosed_cause(ro, 100) == "read-only file system"
    assert "Failure" in diagnosed_cause("avail=900\ncreate=ok\n", 100)
