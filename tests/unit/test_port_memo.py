"""The router ports `status` remembers (cli/port_memo.py): 0600, bounded, and anything odd in the file is ignored."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from app.cli import port_memo


def test_remembered_ports_are_read_back_and_the_file_is_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert port_memo.last_port("ssh:gpu/router:default") is None
    port_memo.remember({"ssh:gpu/router:default": 41234})
    assert port_memo.last_port("ssh:gpu/router:default") == 41234
    path = tmp_path / "llamaherd" / "router_ports.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["router_ports.json"]  # no temporary file left
    for n in range(port_memo.MAX_ENTRIES + 10):
        port_memo.remember({f"ssh:h{n}/router:default": 1000 + n})
    assert len(__import__("json").loads(path.read_text())) == port_memo.MAX_ENTRIES


@pytest.mark.parametrize("text", ['{"a": "80"}', '{"a": 0}', '{"a": 70000}', '{"a": true}', "[1]", "not json", ""])
def test_odd_contents_give_no_guess(text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    path = tmp_path / "llamaherd" / "router_ports.json"
    os.makedirs(path.parent)
    path.write_text(text)
    assert port_memo.last_port("a") is None
