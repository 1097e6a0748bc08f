"""The hub stand-in's fixtures (a pytest plugin: tests/conftest.py names this module in pytest_plugins), apart from
tests/helpers/hub_standin.py so that the stand-in itself needs no pytest (scripts/screenshots.py runs one)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.hub_standin import HubStandin, running_hub, write_tiny_hub


@pytest.fixture(scope="module")
def hub_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of tiny GGUF repos, written once per test module."""
    return write_tiny_hub(tmp_path_factory.mktemp("hub"))


@pytest.fixture
def hub(hub_root: Path) -> Iterator[HubStandin]:
    """The stand-in hub serving `hub_root` on loopback, stopped after the test."""
    with running_hub(hub_root) as h:
        yield h
