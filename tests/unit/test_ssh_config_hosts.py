"""The hosts of ~/.ssh/config offered by the add-a-machine form: plain names only, each once, bounded."""

from __future__ import annotations

from pathlib import Path

from app.services.ssh.config_hosts import HOSTS_BOUND, config_hosts


def test_plain_host_names_in_file_order(tmp_path: Path) -> None:
    cfg = tmp_path / "config"
    cfg.write_text(
        "# mine\nHost gpu-box gpu2  # two names\n  HostName 10.0.0.5\n  User ann\n"
        "Host *.lan !bad.lan\nhost=laptop\nMatch host foo\nHost gpu-box\nHostName not-a-host\n"
    )
    assert config_hosts(cfg) == ["gpu-box", "gpu2", "laptop"]


def test_a_missing_or_huge_file(tmp_path: Path) -> None:
    assert config_hosts(tmp_path / "none") == []
    cfg = tmp_path / "config"
    cfg.write_text("".join(f"Host h{i}\n" for i in range(5000)))
    assert len(config_hosts(cfg)) == HOSTS_BOUND
