"""config.toml: the example loads; every kind of mistake is refused naming the file, the key and the line."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from app.config import (
    Config,
    MachineConfig,
    load_config,
    parse_config,
    resolve_config_path,
    write_config,
)
from app.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]


def test_example_config_loads_every_key() -> None:
    cfg = load_config(ROOT / "app" / "config.example.toml")
    names = [m.name for m in cfg.machines]
    assert names == ["workstation", "gpu-box", "shared-router"]
    ws, box, shared = cfg.machines
    assert ws.is_local and ws.models_max == 1 and ws.extra_args == ("--sleep-idle-seconds", "600")
    assert ws.api_key_env == "WORKSTATION_LLAMA_KEY"
    assert box.host == "gpu-box.lan" and box.user == "llama" and box.port == 22
    assert box.identity_file == "~/.ssh/id_ed25519" and box.models_dirs == ("/srv/models",)
    assert shared.attach_only and shared.url == "http://127.0.0.1:8080"
    assert cfg.ui.log_lines == 10_000
    assert cfg.aliases == {"gb": "machine gpu-box", "coders": "load qwen2.5-coder-14b on workstation gpu-box"}


def refuse(text: str) -> str:
    with pytest.raises(ConfigError) as e:
        parse_config(text, Path("/etc/herd.toml"))
    return str(e.value)


def test_unknown_key_names_file_key_and_line() -> None:
    msg = refuse('[[machines]]\nname = "a"\n\n[[machines]]\nname = "b"\nhots = "x"\n')
    assert msg.startswith("/etc/herd.toml:6:") and "'hots'" in msg and "unknown key" in msg


def test_unknown_top_level_key() -> None:
    msg = refuse('colour = "red"\n')
    assert "/etc/herd.toml:1" in msg and "'colour'" in msg


def test_wrong_type_names_key_and_line() -> None:
    msg = refuse('[[machines]]\nname = "a"\nmodels_max = "two"\n')
    assert "/etc/herd.toml:3" in msg and "'models_max'" in msg and "an integer" in msg


def test_bool_is_not_an_integer() -> None:
    msg = refuse('[[machines]]\nname = "a"\nport = true\n')
    assert "'port'" in msg and "an integer" in msg


def test_list_of_strings_checked() -> None:
    msg = refuse('[[machines]]\nname = "a"\nextra_args = ["--x", 3]\n')
    assert "'extra_args'" in msg and "a list of strings" in msg


def test_missing_name() -> None:
    msg = refuse('[[machines]]\nname = "a"\n[[machines]]\nhost = "local"\n')
    assert "/etc/herd.toml:3" in msg and "'name' is missing" in msg


def test_duplicate_name() -> None:
    msg = refuse('[[machines]]\nname = "a"\n[[machines]]\nname = "a"\n')
    assert "/etc/herd.toml:4" in msg and "duplicate machine name 'a'" in msg


def test_url_with_router_keys_is_refused() -> None:
    msg = refuse('[[machines]]\nname = "a"\nurl = "http://127.0.0.1:1"\nmodels_max = 2\n')
    assert "/etc/herd.toml:4" in msg and "'models_max'" in msg and "url" in msg


def test_negative_port() -> None:
    msg = refuse('[[machines]]\nname = "a"\nrouter_port = -1\n')
    assert "'router_port'" in msg


def test_toml_syntax_error_names_the_line() -> None:
    msg = refuse('[[machines]]\nname = "a\n')
    assert "/etc/herd.toml" in msg and "line 2" in msg


def test_ui_unknown_key() -> None:
    msg = refuse("[ui]\nasci = true\n")
    assert "/etc/herd.toml:2" in msg and "'asci'" in msg


def test_missing_file_is_empty_config(tmp_path: Path) -> None:
    cfg = load_config(tmp_path / "nope.toml")
    assert cfg.machines == ()


def test_config_path_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("LLAMAHERD_CONFIG", raising=False)
    assert resolve_config_path(None) == tmp_path / "xdg" / "llamaherd" / "config.toml"
    monkeypatch.setenv("LLAMAHERD_CONFIG", str(tmp_path / "env.toml"))
    assert resolve_config_path(None) == tmp_path / "env.toml"
    assert resolve_config_path(str(tmp_path / "cli.toml")) == tmp_path / "cli.toml"


def test_write_is_atomic_0600_and_round_trips(tmp_path: Path) -> None:
    cfg = Config(
        machines=(
            MachineConfig(name="a", models_max=2, extra_args=("--x", "1")),
            MachineConfig(name="b", host="box", user="u", port=2222, api_key_env="KEY"),
        ),
        keymap={"load": "l"},
        aliases={"gb": "machine b"},
    )
    path = tmp_path / "sub" / "config.toml"
    write_config(cfg, path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    again = load_config(path)
    assert again.machines == cfg.machines and again.keymap == {"load": "l"} and again.aliases == {"gb": "machine b"}
    assert [p.name for p in path.parent.iterdir()] == ["config.toml"]  # no temp file left


def test_api_key_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    m = MachineConfig(name="a", api_key_env="HERD_TEST_KEY")
    monkeypatch.delenv("HERD_TEST_KEY", raising=False)
    assert m.api_key() is None
    monkeypatch.setenv("HERD_TEST_KEY", "s3cret")
    assert m.api_key() == "s3cret"


# ---- every value checked at load (issue 38, case 4) ----


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("[ui]\nlog_lines = -5\n", 2, "'log_lines' must be between 1 and"),
        ("[ui]\nlog_lines = 0\n", 2, "'log_lines'"),
        ("[ui]\nlog_lines = 99000000\n", 2, "'log_lines'"),
        ('[[machines]]\nname = "a"\nurl = "127.0.0.1:8080"\n', 3, "http:// or https://"),
        ('[[machines]]\nname = "a"\nurl = "ftp://h:21"\n', 3, "http:// or https://"),
        ('[[machines]]\nname = "a"\nurl = "http://:8080"\n', 3, "names no host"),
        ('[[machines]]\nname = "a"\nurl = "http://h:99999"\n', 3, "not a URL"),
        ('[[machines]]\nname = "a"\nhub = "huggingface.co"\n', 3, "'hub'"),
        ('[[machines]]\nname = "a"\nport = 0\n', 3, "'port' must be between 1 and 65535"),
        ('[[machines]]\nname = "a"\nrouter_port = 70000\n', 3, "'router_port'"),
        ('[[machines]]\nname = "a"\nmodels_max = -1\n', 3, "'models_max'"),
        ('[[machines]]\nname = "a"\nrouter = "../x"\n', 3, "'router'"),
        ('[[machines]]\nname = "a"\napi_key_env = "MY KEY"\n', 3, "environment variable"),
        ('[[machines]]\nname = "a"\nhost = "gpu box"\n', 3, "spaces"),
        ('[[machines]]\nname = "a"\npreset = ""\n', 3, "empty"),
        ('[[machines]]\nname = "a\\u001b[2J"\n', 2, "control characters"),
        ('[keymap]\nlaod = "L"\n', 2, "did you mean load"),
        ('[keymap]\nload = ""\n', 2, "empty"),
        ('[keymap]\nload = "l,,L"\n', 2, "empty key"),
        ('[keymap]\nload = "ctrl + l"\n', 2, "not a key name"),
        ('[keymap]\nunload = "l"\n', 2, "on unload and on load"),
        ('[keymap]\nhistory_filter = "ctrl+r"\n', 2, "history_refresh"),
        ('[aliases]\n"g b" = "machine a"\n', 2, "one word"),
        ('[aliases]\n# mine\nload = "machine a"\n', 3, "the command 'load' itself"),
        ('[aliases]\ngb = "go a"\n', 2, "'go', which is no command"),
        ('[aliases]\ngb = "st a"\n', 2, "could be start, stop"),
        ('[aliases]\ngb = "   "\n', 2, "must be a command"),
        ("[aliases]\ngb = 3\n", 2, "must be a command"),
        ('[aliases]\ngb = "machine a\\nfleet"\n', 2, "control character"),
        ('[aliases]\ngb = "machine a"\nGB = "machine b"\n', 3, "only in case"),
    ],
)
def test_each_value_is_checked_with_file_line_key(text: str, line: int, words: str) -> None:
    msg = refuse(text)
    assert msg.startswith(f"/etc/herd.toml:{line}:"), msg
    assert words in msg, msg


@pytest.mark.parametrize(
    "text",
    [
        '[[machines]]\nname = "a"\nurl = "https://llm.example.com/base"\n',
        '[[machines]]\nname = "a"\nurl = "http://[::1]:8080"\n',
        '[[machines]]\nname = "a"\nmodels_max = 0\nrouter = "team-2.b"\n',
        # a swap, both sides remapped, and a key a pane shares with the screen by default (m: files, log model)
        '[keymap]\nload = "u"\nunload = "l"\nmodel_files = "F"\nsort = "ctrl+o"\n',
        '[keymap]\nhistory_close = "escape"\n',
    ],
)
def test_good_values_still_load(text: str) -> None:
    parse_config(text, Path("/etc/herd.toml"))


def test_cli_exits_2_on_a_bad_value_headless_and_for_the_dashboard(tmp_path: Path) -> None:
    """The same check for `status` and for the dashboard (no command): the dashboard used to crash on log_lines."""
    from app.cli.main import main

    cfg = tmp_path / "c.toml"
    cfg.write_text("[ui]\nlog_lines = -5\n")
    assert main(["--config", str(cfg), "status"]) == 2
    assert main(["--config", str(cfg)]) == 2
