"""`:` commands: parsed against the names the dashboard knows, every mistake said in words, the last word completed."""

from __future__ import annotations

import pytest

from app.ui.dashboard.command_line import Command, CommandError, Names, candidates, complete, parse

NAMES = Names(
    machines=["gpu-a", "gpu-b", "laptop"],
    models={"gpu-a": ["qwen3-8b", "llama-70b"], "gpu-b": ["qwen3-8b", "coder"], "laptop": ["phi-4"]},
    selected="gpu-a",
)


def test_verbs_and_their_names() -> None:
    assert parse("load qwen3-8b on gpu-a gpu-b", NAMES) == Command("load", "qwen3-8b", ("gpu-a", "gpu-b"))
    assert parse("load qwen3-8b", NAMES) == Command("load", "qwen3-8b", ("gpu-a",))  # the selected machine has it
    assert parse("unload coder", NAMES) == Command("unload", "coder", ("gpu-b",))  # the one machine that has it
    assert parse("stop", NAMES) == Command("stop", None, ("gpu-a",))
    assert parse("stop gpu-b laptop", NAMES) == Command("stop", None, ("gpu-b", "laptop"))
    assert parse("machine laptop", NAMES) == Command("machine", None, ("laptop",))
    assert parse("fleet", NAMES) == Command("fleet")
    assert parse("pull org/repo:Q4_K_M on laptop", NAMES) == Command("pull", "org/repo:Q4_K_M", ("laptop",))
    assert parse("lo phi-4", NAMES) == Command("load", "phi-4", ("laptop",))  # a verb's unique beginning


@pytest.mark.parametrize(
    ("typed", "said"),
    [
        ("", "a command"),
        ("st gpu-a", "could be start, stop"),
        ("launch x", "no command 'launch'"),
        ("load", "usage: load MODEL"),
        ("load nope", "no machine has a model 'nope'"),
        ("load qwen3-8b on nowhere", "no machine 'nowhere'"),
        ("load phi-4 on gpu-a", "gpu-a has no model 'phi-4'"),
        ("load qwen3-8b at gpu-a", "`on MACHINE...` or nothing"),
        ("fleet now", "fleet takes nothing more"),
        ("machine gpu-a gpu-b", "usage: machine NAME"),
        ("ask qwen3-8b on gpu-a gpu-b", "one machine at a time"),
    ],
)
def test_mistakes_are_said(typed: str, said: str) -> None:
    with pytest.raises(CommandError) as e:
        parse(typed, NAMES)
    assert said in str(e.value)


def test_a_model_on_several_machines_asks_which() -> None:
    names = Names(NAMES.machines, NAMES.models, selected="laptop")
    with pytest.raises(CommandError) as e:
        parse("load qwen3-8b", names)
    assert str(e.value) == "qwen3-8b is on gpu-a, gpu-b: say which with `on MACHINE`"


def test_completion_word_by_word() -> None:
    assert complete("lo", NAMES) == "load"
    assert complete("load q", NAMES) == "load qwen3-8b"
    assert complete("load qwen3-8b ", NAMES) == "load qwen3-8b on"
    assert candidates("load qwen3-8b on ", NAMES) == ["gpu-a", "gpu-b"]  # only machines that have it
    assert candidates("load qwen3-8b on gpu-a ", NAMES) == ["gpu-b"]  # not named twice
    assert complete("stop l", NAMES) == "stop laptop"
    assert complete("machine laptop ", NAMES) is None  # one machine only
    assert complete("fleet ", NAMES) is None
    assert complete("zz", NAMES) is None


ALIASED = Names(
    machines=NAMES.machines,
    models=NAMES.models,
    selected="gpu-a",
    aliases={"gb": "machine gpu-b", "q8": "load qwen3-8b", "Coders": "load coder on gpu-b"},
)


def test_an_alias_stands_for_its_command_and_words_after_it_follow() -> None:
    assert parse("gb", ALIASED) == Command("machine", None, ("gpu-b",))
    assert parse("q8 on gpu-a gpu-b", ALIASED) == Command("load", "qwen3-8b", ("gpu-a", "gpu-b"))
    assert parse("coders", ALIASED) == Command("load", "coder", ("gpu-b",))  # typed in either case
    # a verb keeps its meaning, and a word that is no alias is read as a verb (or its beginning) as before
    assert parse("load phi-4", ALIASED) == Command("load", "phi-4", ("laptop",))
    assert parse("lo phi-4", ALIASED) == Command("load", "phi-4", ("laptop",))


def test_a_mistake_through_an_alias_names_the_alias() -> None:
    with pytest.raises(CommandError) as e:
        parse("q8 on laptop", ALIASED)
    assert "laptop has no model 'qwen3-8b'" in str(e.value) and "(alias q8 = 'load qwen3-8b')" in str(e.value)


def test_tab_offers_aliases_with_the_verbs_and_completes_after_one() -> None:
    assert candidates("", ALIASED)[-3:] == ["Coders", "gb", "q8"]
    assert candidates("g", ALIASED) == ["gb"]
    assert complete("q8 ", ALIASED) == "q8 on"  # after an alias, what its command takes next
    assert candidates("q8 on ", ALIASED) == ["gpu-a", "gpu-b"]
    assert candidates("gb ", ALIASED) == []  # `machine` takes one name, and the alias gave it
