"""The remote read/stat scripts when the file goes between their existence test and the command (a lock directory
its holder removes, a record removed by a concurrent start): "missing", never an error. A CI run once failed on the
stat of the start lock (`cannot stat …/start.lock`) when two starts raced. The race is made certain here: the
command found first on PATH removes the file and then runs the real one."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from app.services.hosts.shell_scripts import HEAD_SCRIPT, MISSING, READ_SCRIPT, STAT_SCRIPT


def _remover(bin_dir: Path, name: str, target: Path) -> None:
    real = shutil.which(name)
    assert real is not None
    script = bin_dir / name
    script.write_text(f"#!/bin/sh\nrm -rf -- '{target}'\nexec {real} \"$@\"\n")
    script.chmod(0o755)


def _run(script: str, *args: str, path: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PATH": path}
    return subprocess.run(["sh", "-c", script, "sh", *args], capture_output=True, env=env, timeout=10, check=False)


@pytest.mark.parametrize(
    ("script", "command", "args"),
    [(STAT_SCRIPT, "find", ()), (READ_SCRIPT, "cat", ()), (HEAD_SCRIPT, "head", ("16",))],
    ids=["stat", "read", "head"],
)
def test_a_file_gone_before_the_command_is_missing(
    tmp_path: Path, script: str, command: str, args: tuple[str, ...]
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    target = tmp_path / "start.lock"
    _remover(bin_dir, command, target)
    target.mkdir() if command == "find" else target.write_text("x\n")
    res = _run(script, *args, str(target), path=f"{bin_dir}:{os.environ['PATH']}")
    assert not target.exists()
    assert res.returncode == MISSING, res


@pytest.mark.parametrize(
    ("script", "args", "out"),
    [(STAT_SCRIPT, (), b"2 "), (READ_SCRIPT, (), b"x\n"), (HEAD_SCRIPT, ("1",), b"x")],
    ids=["stat", "read", "head"],
)
def test_a_file_that_stays_is_answered(tmp_path: Path, script: str, args: tuple[str, ...], out: bytes) -> None:
    target = tmp_path / "f"
    target.write_text("x\n")
    res = _run(script, *args, str(target), path=os.environ["PATH"])
    assert res.returncode == 0 and res.stdout.startswith(out), res
    res = _run(script, *args, str(tmp_path / "none"), path=os.environ["PATH"])
    assert res.returncode == MISSING and res.stdout == b""


def test_a_command_that_fails_on_a_file_still_there_is_an_error(tmp_path: Path) -> None:
    target = tmp_path / "dir"
    target.mkdir()
    res = _run(READ_SCRIPT, str(target), path=os.environ["PATH"])  # cat of a directory fails; the path remains
    assert res.returncode == 1 and b"directory" in res.stderr.lower(), res
