"""The ssh host-key policy without a server: known_hosts, algorithms offered, what a refusal says."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import asyncssh

from app.services.ssh.host_keys import (
    SeenKey,
    SshClient,
    host_key_algs,
    load_known_hosts,
    record_host_key,
    refusal_message,
)

KEY = asyncssh.generate_private_key("ssh-ed25519").convert_to_public()
OTHER = asyncssh.generate_private_key("ssh-ed25519").convert_to_public()


def _client(known_hosts: Path, accept_new: bool) -> SshClient:
    return SshClient(load_known_hosts(str(known_hosts)), accept_new, lambda _c, _e: None)


def test_recorded_key_is_0600_and_matches_on_its_port(tmp_path: Path) -> None:
    kh = tmp_path / "ssh" / "known_hosts"
    record_host_key(str(kh), SeenKey("box", 2222, KEY))
    record_host_key(str(kh), SeenKey("other", 22, OTHER))
    assert stat.S_IMODE(os.stat(kh).st_mode) == 0o600
    lines = kh.read_text().splitlines()
    assert lines[0].startswith("[box]:2222 ssh-ed25519 ") and lines[1].startswith("other ssh-ed25519 ")
    known = load_known_hosts(str(kh))
    assert known.match("box", "", 2222)[0] and not known.match("box", "", None)[0]


def test_missing_known_hosts_is_empty_not_the_users_own(tmp_path: Path) -> None:
    assert not load_known_hosts(str(tmp_path / "nope")).match("localhost", "", None)[0]


def test_new_key_accepted_only_when_asked(tmp_path: Path) -> None:
    kh = tmp_path / "known_hosts"
    refusing = _client(kh, accept_new=False)
    assert not refusing.validate_host_public_key("box", "127.0.0.1", 22, KEY)
    assert refusing.problem is not None and refusing.problem[0] == "unknown"
    accepting = _client(kh, accept_new=True)
    assert accepting.validate_host_public_key("box", "127.0.0.1", 22, KEY)
    assert accepting.accepted == SeenKey("box", 22, KEY) and accepting.problem is None


def test_changed_key_refused_even_when_new_keys_are_accepted(tmp_path: Path) -> None:
    kh = tmp_path / "known_hosts"
    record_host_key(str(kh), SeenKey("box", 22, OTHER))
    c = _client(kh, accept_new=True)
    assert not c.validate_host_public_key("box", "127.0.0.1", 22, KEY)
    assert c.problem is not None and c.problem[0] == "changed" and c.accepted is None


def test_known_key_types_are_offered_first_then_the_rest(tmp_path: Path) -> None:
    kh = tmp_path / "known_hosts"
    assert host_key_algs(load_known_hosts(str(kh)), "box", 2222, None) is None  # nothing known: asyncssh decides
    record_host_key(str(kh), SeenKey("box", 2222, KEY))
    algs = host_key_algs(load_known_hosts(str(kh)), "box", 2222, None)
    assert algs is not None and algs[0] == "ssh-ed25519" and len(algs) == len(set(algs)) > 1


def test_refusals_say_what_and_how_to_fix(tmp_path: Path) -> None:
    kh = tmp_path / "known hosts"
    unknown = _client(kh, accept_new=False)
    unknown.validate_host_public_key("box", "127.0.0.1", 2222, KEY)
    text = refusal_message("gpu", "box", str(kh), unknown, asyncssh.HostKeyNotVerifiable("no"))
    assert "box port 2222 is not known (ssh-ed25519 SHA256:" in text
    assert f"ssh-keyscan -p 2222 box >> '{kh}'" in text and "accept_new_host_key = true" in text
    record_host_key(str(kh), SeenKey("box", 2222, OTHER))
    changed = _client(kh, accept_new=True)
    changed.validate_host_public_key("box", "127.0.0.1", 2222, KEY)
    text = refusal_message("gpu", "box", str(kh), changed, asyncssh.HostKeyNotVerifiable("no"))
    assert text.startswith("WARNING: gpu: the ssh host key of box port 2222 has CHANGED")
    assert f"ssh-keygen -f '{kh}' -R '[box]:2222'" in text
    bare = refusal_message("gpu", "box", str(kh), None, asyncssh.HostKeyNotVerifiable("no key"))
    assert bare == "gpu: the ssh host key of box was refused: no key"
