"""`llamaherd --version`: the installed version on stdout, exit 0, without importing any command's module."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version

PROBE = """
import sys
from app.cli.main import main
try:
    main(["--version"])
except SystemExit as e:
    loaded = sorted(m for m in sys.modules if m.startswith("app.cli.") and m.endswith("_cmds"))
    print("exit", e.code, "commands", loaded, file=sys.stderr)
"""


def test_version_prints_the_installed_version_and_exits_0() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60)
    assert done.stdout.startswith(f"llamaherd {version('llamaherd')} (Python ")
    assert done.stderr.strip() == "exit 0 commands []"


def test_a_command_does_not_read_the_package_metadata_it_does_not_print() -> None:
    probe = (
        "import sys\nfrom app.cli.main import build_parser\n"
        "build_parser('status')\nprint('importlib.metadata' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False", done.stderr  # ~15 ms of every command's start-up, for --version alone
