"""The one way a test says it needs a component (sshd, llama-server, tmux, a privilege).

On a developer machine a missing component skips the test with the reason; under CI=true (`.ci/run` exports it)
it is a failure, so CI can never go green by skipping.

Which component a test needs is also a marker (ssh, llama_server, tmux, root: see pyproject.toml), set by
tests/conftest.py from the fixtures the test takes, so `pytest -m "not ssh"` and the like leave it out.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


def missing(what: str) -> NoReturn:
    """Stop the test: a failure in CI, a skip with the reason elsewhere."""
    if in_ci():
        pytest.fail(f"{what}: required in CI")
    pytest.skip(what)


def require(ok: object, what: str) -> None:
    """Go on only when ok is true; otherwise `missing(what)`."""
    if not ok:
        missing(what)
