"""make installs into the project's own virtual environment (.venv), never into whatever `python3` is; `make test`
and CI (.ci/run runs `make test`) use the same one. Read from `make -n` (what make would run), not from the text."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def dry_run(*args: str) -> list[str]:
    if shutil.which("make") is None:
        pytest.skip("make is not installed (CI installs it)")
    r = subprocess.run(["make", "-n", "-B", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return [ln.strip() for ln in r.stdout.splitlines() if ln.strip() and not ln.startswith("make")]


@pytest.mark.parametrize("target", ["test", "demo"])
def test_every_python_command_runs_in_the_project_venv(target: str) -> None:
    lines = dry_run(target)
    assert "python3 -m venv .venv" in lines  # created on first use
    python = [ln for ln in lines if "python" in ln and "-m venv" not in ln and not ln.startswith("echo")]
    assert python, lines
    for ln in python:
        assert ln.startswith((".venv/bin/python ", "PYTHON=.venv/bin/python ")), ln
    assert any("pip install" in ln for ln in python) and any("install-llama-server.sh" in ln for ln in python)


def test_an_explicit_python_is_used_as_is_and_no_venv_is_made() -> None:
    lines = dry_run("test", "PYTHON=/opt/py/bin/python3")
    assert not any("-m venv" in ln for ln in lines)
    pytest_runs = [ln for ln in lines if " -m pytest " in ln]
    # the parallel run, then the time-bound tests alone, both with that python
    assert [ln.split(" -m pytest ")[0] for ln in pytest_runs] == ["/opt/py/bin/python3"] * 2, lines
    assert '-n 4 --dist loadgroup -m "not timing"' in pytest_runs[0] and pytest_runs[1].endswith("-n 3 -m timing")


def test_the_venv_is_ignored_by_git() -> None:
    assert ".venv/" in (ROOT / ".gitignore").read_text().splitlines()
