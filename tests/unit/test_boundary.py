"""The service layer never imports textual: checked in a fresh interpreter, every module of it."""

from __future__ import annotations

import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import app.services

ROOT = Path(__file__).resolve().parents[2]


def test_services_do_not_import_textual() -> None:
    mods = ["app.services"] + [f"app.services.{m.name}" for m in pkgutil.iter_modules(app.services.__path__)]
    code = (
        "import importlib, sys\n"
        f"for m in {mods!r}: importlib.import_module(m)\n"
        "bad = sorted(k for k in sys.modules if k == 'textual' or k.startswith('textual.'))\n"
        "print(len(sys.modules)); sys.exit(1 if bad else 0)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, f"textual imported by the service layer: {r.stdout}{r.stderr}"
    assert len(mods) > 5  # the check really walked the package


def test_ui_files_do_no_io_themselves() -> None:
    """Widgets go through the service layer: no httpx, asyncssh, subprocess, socket or open() in app/ui."""
    banned = ("import httpx", "import asyncssh", "import subprocess", "import socket", "psutil")
    offenders = []
    for path in (ROOT / "app" / "ui").rglob("*.py"):
        text = path.read_text()
        offenders += [f"{path.name}: {b}" for b in banned if b in text]
        # open() and x.open(), not a name that ends in "open" (set_screen_open(...))
        offenders += [f"{path.name}: open(" for _ in re.finditer(r"(?<!\w)open\(", text)]
    assert not offenders
