"""A command that succeeds prints nothing on stderr (issue 38, case 7): with an ssh machine configured, each
command used to print ten lines of asyncssh's DSA deprecation warnings before its own words."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.herd import Herd
from tests.helpers.machine_toml import ssh_toml
from tests.helpers.sshd import SshServer


def test_successful_commands_with_an_ssh_machine_print_nothing_on_stderr(
    sshd: SshServer, tmp_path: Path, llama_server: str
) -> None:
    herd = Herd(root=tmp_path, config=tmp_path / "config.toml")
    herd.write_config(ssh_toml(sshd, "far", tmp_path / "models.ini", llama_server))
    for args in (("status",), ("status", "--json"), ("history",), ("config", "example")):
        r = herd.run(*args)
        assert r.returncode == 0, (args, r.stderr)
        assert r.stderr == "", (args, r.stderr)
