"""[[hooks]] in config.toml: read into HookConfig, every mistake refused with the file, line and key; and the
situations a hook runs on, worked out from fleet events (begun on a change, never on the first look)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.config import Config, config_to_dict, parse_config
from app.config_hooks import HookConfig, parse_duration
from app.errors import ConfigError
from app.services.core.fleet_events import AnsweringChanged, MachineChanged, ModelsChanged, ModelsUpdated
from app.services.core.host_types import Connection
from app.services.core.router_types import ModelInfo, ModelState
from app.services.hooks.triggers import Triggers
from tests.helpers.standin_fleet import view

P = Path("/etc/llamaherd.toml")


def test_hooks_are_read_and_written_back() -> None:
    cfg = parse_config(
        '[[hooks]]\non = ["model_failed", "machine_unreachable"]\ncommand = ["notify-send", "llamaherd"]\n'
        'sustain = "30s"\n\n[[hooks]]\non = "router_exited"\ncommand = ["true"]\ntimeout = "2m"\n',
        P,
    )
    assert cfg.hooks == (
        HookConfig(("model_failed", "machine_unreachable"), ("notify-send", "llamaherd"), sustain=30.0),
        HookConfig(("router_exited",), ("true",), timeout=120.0),
    )
    again = parse_config(__import__("tomli_w").dumps(config_to_dict(cfg)), P)
    assert again.hooks == cfg.hooks
    assert Config().hooks == ()


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (
            '[[hooks]]\non = ["model_flailed"]\ncommand = ["x"]\n',
            "/etc/llamaherd.toml:2: key 'on': no event 'model_flailed'",
        ),
        ('[[hooks]]\non = []\ncommand = ["x"]\n', "/etc/llamaherd.toml:2: key 'on' in [[hooks]] #1 must list events"),
        ('[[hooks]]\non = ["model_failed"]\ncommand = []\n', "/etc/llamaherd.toml:3: key 'command' in [[hooks]] #1"),
        (
            '[[hooks]]\non = ["model_failed"]\ncommand = "rm -rf /"\n',
            "key 'command' in [[hooks]] #1 must be a non-empty",
        ),
        (
            '[[hooks]]\non = ["model_failed"]\ncommand = ["x"]\nsustain = "soon"\n',
            ":4: key 'sustain' must be a duration",
        ),
        (
            '[[hooks]]\non = ["model_failed"]\ncommand = ["x"]\ntimeout = 0\n',
            ":4: key 'timeout' must be a duration above 0",
        ),
        ('[[hooks]]\non = ["model_failed"]\ncommand = ["x"]\nwhen = 1\n', ":4: unknown key 'when' in [[hooks]] #1"),
        ("hooks = 3\n", "key 'hooks' must be an array of tables"),
    ],
)
def test_mistakes_name_file_line_and_key(body: str, said: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse_config(body, P)
    assert said in str(e.value)


def test_durations() -> None:
    assert [parse_duration(v) for v in (30, 2.5, "30s", "2m", "1h", "250ms", " 5 ")] == [
        30,
        2.5,
        30,
        120,
        3600,
        0.25,
        5,
    ]
    assert [parse_duration(v) for v in ("soon", -1, True, "5d", None)] == [None] * 5


def m(mid: str, failed: bool = False) -> ModelInfo:
    return ModelInfo(id=mid, state=ModelState.UNLOADED, failed=failed, exit_code=1 if failed else None)


def test_situations_begin_on_a_change_never_on_the_first_look() -> None:
    t = Triggers()
    assert t.feed(MachineChanged("box", view("box"))) == []
    assert t.feed(ModelsChanged("box", (m("a"), m("old", failed=True)))) == []  # failed before we looked: history
    began = t.feed(ModelsUpdated("box", (m("a", failed=True),)))
    assert [(c.situation.event, c.situation.model, c.situation.reason, c.began) for c in began] == [
        ("model_failed", "a", "exit code 1", True)
    ]
    ended = t.feed(ModelsChanged("box", (m("a"), m("old", failed=True))))
    assert [(c.situation.model, c.began) for c in ended] == [("a", False)]
    down = t.feed(MachineChanged("box", view("box", connection=Connection.UNREACHABLE, connection_reason="refused")))
    assert [(c.situation.event, c.situation.reason, c.began) for c in down] == [
        ("machine_unreachable", "refused", True), ("machine_back", "", False),
    ]  # fmt: skip
    back = t.feed(MachineChanged("box", view("box")))
    assert [(c.situation.event, c.began) for c in back] == [("machine_unreachable", False), ("machine_back", True)]
    quiet = t.feed(AnsweringChanged("box", "a", answering=False, reason="no /metrics answer"))
    assert [(c.situation.event, c.began) for c in quiet] == [("model_not_answering", True)]
