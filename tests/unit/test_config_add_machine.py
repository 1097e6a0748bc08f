"""A machine added from the dashboard is appended to config.toml as text: comments, order and every other table
kept, the mode kept, checked by the loader as a hand edit is, nothing written when refused."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from app.config import load_config
from app.config_add_machine import append_machine, machine_table
from app.errors import ConfigError

HAND_WRITTEN = """\
# my fleet; keep this comment
[ui]
log_lines = 5000   # more than the default

[[machines]]
name = "gpu"       # the big one
host = "gpu.lan"

[keymap]
load = "L"
"""


def test_the_form_fields_make_a_table_of_the_keys_they_mean() -> None:
    assert machine_table(" box ", "") == {"name": "box"}
    assert machine_table("box", "local") == {"name": "box"}
    assert machine_table("box", "ann@gpu.lan:2222", "BOX_KEY") == {
        "name": "box", "host": "gpu.lan", "user": "ann", "port": 2222, "api_key_env": "BOX_KEY",
    }  # fmt: skip
    assert machine_table("box", "gpu.lan") == {"name": "box", "host": "gpu.lan"}
    assert machine_table("box", "[fe80::1]:22") == {"name": "box", "host": "fe80::1", "port": 22}
    assert machine_table("box", "http://10.0.0.5:8080") == {"name": "box", "url": "http://10.0.0.5:8080"}
    assert machine_table("box", "gpu:abc")["port"] == "abc"  # the loader refuses it, in its own words


def test_appending_keeps_everything_else_and_the_mode(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(HAND_WRITTEN)
    path.chmod(0o640)
    added = append_machine(path, machine_table("box", "ann@box.lan:2222", "BOX_KEY"))
    assert (added.name, added.host, added.user, added.port, added.api_key_env) == (
        "box",
        "box.lan",
        "ann",
        2222,
        "BOX_KEY",
    )
    text = path.read_text()
    assert text.startswith(HAND_WRITTEN)  # every byte that was there, comments included
    cfg = load_config(path)
    assert [m.name for m in cfg.machines] == ["gpu", "box"]
    assert cfg.ui.log_lines == 5000 and cfg.keymap == {"load": "L"}
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["config.toml"]  # no temp file left


@pytest.mark.parametrize(
    ("name", "target", "key_env", "said"),
    [
        ("gpu", "other.lan", "", "duplicate machine name 'gpu'"),
        ("box", "box.lan:70000", "", "must be between 1 and 65535"),
        ("box", "box.lan:abc", "", "must be an integer"),
        ("box", "http://", "", "names no host"),
        ("box", "local", "MY-KEY", "must be the name of an environment variable"),
        ("", "local", "", "key 'name' is missing"),
        ("two words", "ann@two words", "", "must not hold spaces"),
    ],
)
def test_a_table_the_loader_refuses_is_refused_in_its_words_and_nothing_is_written(
    tmp_path: Path, name: str, target: str, key_env: str, said: str
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(HAND_WRITTEN)
    with pytest.raises(ConfigError) as e:
        append_machine(path, machine_table(name, target, key_env))
    assert said in str(e.value)
    assert not str(e.value).startswith(str(path) + ":")  # no line of a text that was never written
    assert path.read_text() == HAND_WRITTEN


def test_a_config_that_named_no_machine_keeps_its_implicit_local(tmp_path: Path) -> None:
    path = tmp_path / "new" / "config.toml"  # missing, as on the first run
    append_machine(path, machine_table("far", "ann@far.lan"))
    assert [m.name for m in load_config(path).machines] == ["local", "far"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_linked_config_stays_a_link(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "llamaherd.toml"
    real.parent.mkdir()
    real.write_text(HAND_WRITTEN)
    link = tmp_path / "config.toml"
    link.symlink_to(real)
    append_machine(link, machine_table("box", "local"))
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert [m.name for m in load_config(link).machines] == ["gpu", "box"]


def test_a_file_that_does_not_load_now_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[ui]\nlog_lines = 0\n")
    with pytest.raises(ConfigError, match="log_lines"):
        append_machine(path, machine_table("box", "local"))
    assert path.read_text() == "[ui]\nlog_lines = 0\n"
