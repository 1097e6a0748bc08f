"""A real tmpfs for fault tests: mounted by the test, filled to the brim or made read-only, always unmounted."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.needs import missing


@contextlib.contextmanager
def tmpfs(where: Path, size_kib: int = 256) -> Iterator[Path]:
    """A fresh tmpfs of `size_kib` at `where`; skipped with the reason where mounting is not permitted (a
    failure under CI=true, which runs as root)."""
    where.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_kib}k,mode=0755", "tmpfs", str(where)],
        capture_output=True, text=True,
    )  # fmt: skip
    if r.returncode != 0:
        missing(f"cannot mount a tmpfs here ({r.stderr.strip() or r.returncode})")
    try:
        yield where
    finally:
        if subprocess.run(["umount", str(where)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(where)], capture_output=True)


def fill(folder: Path) -> Path:
    """Fill the file system under `folder` until it refuses one more byte; returns the filler file."""
    filler = folder / "filler"
    with open(filler, "wb", buffering=0) as f:
        for size in (65536, 4096, 512, 1):
            while True:
                try:
                    f.write(b"\0" * size)
                except OSError as err:
                    if err.errno != errno.ENOSPC:
                        raise
                    break
    with pytest.raises(OSError) as e, open(folder / "probe", "wb", buffering=0) as f:
        f.write(b"x")
        os.fsync(f.fileno())
    assert e.value.errno == errno.ENOSPC
    with contextlib.suppress(FileNotFoundError):
        (folder / "probe").unlink()
    return filler


def read_only(where: Path) -> None:
    r = subprocess.run(["mount", "-o", "remount,ro", str(where)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def leftovers(folder: Path, keep: set[str]) -> list[str]:
    """Files in `folder` other than `keep`: temp files a failed write left behind."""
    return sorted(p.name for p in folder.iterdir() if p.name not in keep)
