"""Typed failures carry what a front end needs to word them, and each front end words them its own way."""

from __future__ import annotations

import pytest

from app.cli.wording import say
from app.services.core.errors import PresetError, ProgramNotFound, RouterNotRunning, SectionExists
from app.services.lifecycle.llama_server_binary import HOW_TO_GET, program_not_found
from app.services.presets.fields import FIELDS_BY_KEY, validate_key, validate_value
from app.services.presets.ini_text import PresetDoc
from app.services.presets.sections import apply_form, validate_mapping
from app.services.presets.store import add_section


def test_a_refused_value_names_its_field_and_the_key_as_written() -> None:
    with pytest.raises(PresetError) as refused:
        validate_mapping({"c": "abc"})  # `c` is a spelling of the Context size field
    assert (refused.value.field, refused.value.key) == ("ctx-size", "ctx-size")
    assert str(refused.value).startswith("Context size (ctx-size): 'abc' is not a whole number")
    with pytest.raises(PresetError) as refused:
        validate_value(FIELDS_BY_KEY["chat-template"], "chatml;x")
    assert refused.value.field == "chat-template"


def test_a_refused_key_names_the_key_and_no_field() -> None:
    with pytest.raises(PresetError) as refused:
        validate_key("no-such-option", frozenset({"ctx-size"}))
    assert (refused.value.key, refused.value.field) == ("no-such-option", None)
    with pytest.raises(PresetError) as refused:
        validate_key("9lives")
    assert refused.value.key == "9lives"
    with pytest.raises(PresetError) as refused:
        apply_form({}, {"mmproj": "proj.gguf"})  # a bare projector name without a model path
    assert refused.value.field == "mmproj"


def test_a_taken_section_name_is_one_error_with_the_name_and_no_front_ends_words() -> None:
    edit = add_section("alpha", {"model": "/m/alpha.gguf"}, None)
    with pytest.raises(SectionExists) as refused:
        edit(PresetDoc.parse("[alpha]\nmodel = /m/a.gguf\n"))
    assert refused.value.name == "alpha" and str(refused.value) == "section [alpha] already exists"
    with pytest.raises(SectionExists):
        PresetDoc.parse("[alpha]\n").add_section("alpha", {})


def test_a_missing_llama_server_is_typed_and_says_how_to_get_one() -> None:
    e = program_not_found()
    assert isinstance(e, ProgramNotFound) and e.program == "llama-server"
    assert str(e) == HOW_TO_GET and HOW_TO_GET.startswith("llama-server was not found: set $LLAMA_SERVER")
    assert say(e) == HOW_TO_GET  # the command line says it as it is


def test_the_command_line_adds_its_own_hint_to_a_router_not_running() -> None:
    e = RouterNotRunning("box", "stopped", "stopped on request")
    assert str(e) == "the router on box is not running (stopped: stopped on request)"
    assert say(e) == f"{e}; start it with `llamaherd start box`"
    assert str(RouterNotRunning("box", "absent")) == "the router on box is not running (absent)"
