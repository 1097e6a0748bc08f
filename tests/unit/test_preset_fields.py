"""The field table: validation, refusals, reading and writing a section through the form, and the keys the router
knows (from a help excerpt, and from the real `llama-server --help` when it is installed)."""

from __future__ import annotations

import subprocess

import pytest

from app.services.core.errors import PresetError
from app.services.presets.accepted_keys import known_keys_from_help
from app.services.presets.fields import (
    FIELDS,
    FIELDS_BY_KEY,
    OFF,
    PRESET_ONLY_KEYS,
    field_for,
    validate_key,
    validate_section_name,
    validate_value,
)
from app.services.presets.ini_text import PresetDoc
from app.services.presets.sections import (
    apply_form,
    initial_values,
    mtp_default,
    read_form,
    resolve_mmproj,
    validate_mapping,
)

HELP_EXCERPT = """\
----- common params -----

-h,    --help, --usage                  print usage and exit
-c,    --ctx-size N                     size of the prompt context (default: 0, 0 = loaded from model)
                                        (env: LLAMA_ARG_CTX_SIZE)
-n,    --predict, --n-predict N         number of tokens to predict (default: -1, -1 = infinity)
                                        (env: LLAMA_ARG_N_PREDICT)
-fa,   --flash-attn [on|off|auto]       set Flash Attention use ('on', 'off', or 'auto', default: 'auto')
                                        (env: LLAMA_ARG_FLASH_ATTN)
-ngl,  --gpu-layers, --n-gpu-layers N   max. number of layers to store in VRAM, either an exact number,
                                        'auto', or 'all' (default: auto)
                                        (env: LLAMA_ARG_N_GPU_LAYERS)
-sm,   --split-mode {none,layer,row,tensor}
                                        how to split the model across multiple GPUs, one of:
                                        - none: use one GPU only
                                        -1 = a continuation line that looks like a flag
                                        (env: LLAMA_ARG_SPLIT_MODE)
--mmproj-auto, --no-mmproj, --no-mmproj-auto
                                        whether to use multimodal projector file (if available), useful when
                                        using -hf (default: enabled)
                                        (env: LLAMA_ARG_MMPROJ_AUTO)
-cb,   --cont-batching, -nocb, --no-cont-batching
                                        whether to enable continuous batching (default: enabled)
                                        (env: LLAMA_ARG_CONT_BATCHING)
--no-warmup                             skip warming up the model with an empty run
--spec-draft-model, -md, --model-draft FNAME
                                        draft model for speculative decoding (default: unused)
                                        (env: LLAMA_ARG_SPEC_DRAFT_MODEL)

----- example-specific params -----

--jinja, --no-jinja                     whether to use jinja template engine for chat (default: enabled)
                                        (env: LLAMA_ARG_JINJA)
--sleep-idle-seconds SECONDS            number of seconds of idleness after which the server will sleep
                                        (default: -1; -1 = disabled)
"""


# ---- the table ----


def test_the_table_is_consistent() -> None:
    keys = [k for f in FIELDS for k in f.keys]
    assert len(keys) == len(set(keys)), "one key belongs to one field"
    for f in FIELDS:
        assert f.label and f.help
        assert (f.kind == "choice") == bool(f.choices)
        if f.default is not None:
            assert f.default.strip()
        if f.initial is not None:
            assert validate_value(f, f.initial) == f.initial
        assert field_for(f.key) is f
    assert initial_values() == {"parallel": "1"}
    for key in ["ctx-size", "n-gpu-layers", "threads", "parallel", "mmproj", "spec-type", "spec-draft-n-max"]:
        assert key in FIELDS_BY_KEY
    for key in ["flash-attn", "cache-type-k", "cache-type-v", "jinja", "chat-template", "alias", "tags"]:
        assert key in FIELDS_BY_KEY
    for key in ["load-on-startup", "stop-timeout", "sleep-idle-seconds", "model"]:
        assert key in FIELDS_BY_KEY


# ---- values ----


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("ctx-size", " 8192 ", "8192"),
        ("c", "0", "0"),
        ("ctx-size", "", ""),
        ("n-gpu-layers", "99", "99"),
        ("n-gpu-layers", "AUTO", "auto"),
        ("ngl", "all", "all"),
        ("threads", "-1", "-1"),
        ("parallel", "-1", "-1"),
        ("parallel", "4", "4"),
        ("spec-type", "draft-mtp", "draft-mtp"),
        ("spec-type", "off", "none"),
        ("spec-type", "none", "none"),
        ("spec-type", "draft-mtp, ngram-mod", "draft-mtp,ngram-mod"),
        ("flash-attn", "enabled", "on"),
        ("flash-attn", "0", "off"),
        ("fa", "auto", "auto"),
        ("cache-type-k", "Q8_0", "q8_0"),
        ("cache-type-v", "iq4_nl", "iq4_nl"),
        ("jinja", "on", "true"),
        ("no-jinja", "1", "true"),
        ("load-on-startup", "FALSE", "false"),
        ("alias", " a, b ,, a ", "a, b"),
        ("tags", "vision", "vision"),
        ("stop-timeout", "0", "0"),
        ("sleep-idle-seconds", "-1", "-1"),
        ("sleep-idle-seconds", "300", "300"),
        ("mmproj", "mmproj-F16.gguf", "mmproj-F16.gguf"),
        ("chat-template", "chatml", "chatml"),
        ("unknown-key", " anything ", "anything"),
    ],
)
def test_validate_value_normalises(key: str, value: str, expected: str) -> None:
    assert validate_value(key, value) == expected


@pytest.mark.parametrize(
    ("key", "value", "why"),
    [
        ("ctx-size", "8k", "not a whole number"),
        ("ctx-size", "-1", "below the minimum 0"),
        ("n-gpu-layers", "most", "not a whole number or 'auto' or 'all'"),
        ("parallel", "0", "0 is not allowed"),
        ("sleep-idle-seconds", "0", "0 is not allowed"),
        ("sleep-idle-seconds", "-2", "below the minimum -1"),
        ("stop-timeout", "-5", "below the minimum 0"),
        ("jinja", "yes", "is not one of on, enabled"),
        ("flash-attn", "maybe", "is not one of on, off, auto"),
        ("spec-type", "draft-magic", "is not one of draft-mtp, off"),
        ("cache-type-k", "q2_k", "is not one of f32"),
    ],
)
def test_validate_value_refuses_with_the_field_and_why(key: str, value: str, why: str) -> None:
    with pytest.raises(PresetError, match=why) as info:
        validate_value(key, value)
    assert FIELDS_BY_KEY[field_for(key).key].label in str(info.value)  # type: ignore[union-attr]


@pytest.mark.parametrize("value", ["a;b", "a # b", "line\nbreak", "cr\rhere"])
@pytest.mark.parametrize("key", ["alias", "chat-template", "model", "future-key"])
def test_values_with_comment_characters_or_line_breaks_are_refused(key: str, value: str) -> None:
    with pytest.raises(
        PresetError, match="values cannot contain ';', '#' or a line break: the INI format has no quoting"
    ):
        validate_value(key, value)


# ---- keys and names ----


def test_validate_key_grammar_and_known_keys() -> None:
    known = frozenset({"ctx-size", "c"})
    assert validate_key("ctx-size", known) == "ctx-size"
    assert validate_key("anything.goes", None) == "anything.goes"
    for preset_only in ["load-on-startup", "stop-timeout", "dedup-cache-models", "version"]:
        assert validate_key(preset_only, known) == preset_only
    with pytest.raises(PresetError, match="one unknown key makes the router refuse the whole file"):
        validate_key("mmap", known)
    for bad in ["", "9a", "a b", "-c"]:
        with pytest.raises(PresetError, match="key"):
            validate_key(bad, None)


def test_validate_section_name() -> None:
    assert validate_section_name("org/repo:Q4_K_M") == "org/repo:Q4_K_M"
    for bad, why in [("", "empty"), ("a]b", r"\]"), ("a\nb", "line break"), (" a", "blanks"), ("a ", "blanks")]:
        with pytest.raises(PresetError, match=why):
            validate_section_name(bad)


def test_known_keys_from_a_help_excerpt() -> None:
    keys = known_keys_from_help(HELP_EXCERPT)
    expected = {
        "h", "help", "usage", "c", "ctx-size", "LLAMA_ARG_CTX_SIZE", "n", "predict", "n-predict",
        "fa", "flash-attn", "LLAMA_ARG_FLASH_ATTN", "ngl", "gpu-layers", "n-gpu-layers", "LLAMA_ARG_N_GPU_LAYERS",
        "sm", "split-mode", "mmproj-auto", "no-mmproj", "no-mmproj-auto", "LLAMA_ARG_MMPROJ_AUTO",
        "LLAMA_ARG_NO_MMPROJ_AUTO", "cb", "cont-batching", "nocb", "no-cont-batching", "LLAMA_ARG_CONT_BATCHING",
        "LLAMA_ARG_NO_CONT_BATCHING", "no-warmup", "spec-draft-model", "md", "model-draft",
        "LLAMA_ARG_SPEC_DRAFT_MODEL", "jinja", "no-jinja", "LLAMA_ARG_JINJA", "LLAMA_ARG_NO_JINJA",
        "sleep-idle-seconds", "LLAMA_ARG_N_PREDICT", "LLAMA_ARG_SPLIT_MODE",
    }  # fmt: skip
    assert keys == expected
    assert "1" not in keys and "none" not in keys  # continuation lines are not options
    assert "LLAMA_ARG_NO_CTX_SIZE" not in keys  # only flags with a --no- form get the NO_ env name


def test_known_keys_from_the_real_help(llama_server: str) -> None:
    result = subprocess.run([llama_server, "--help"], capture_output=True, text=True, timeout=60, check=False)
    keys = known_keys_from_help(result.stdout)
    # every spelling of every field is a key this llama-server accepts (or a preset-only key)
    for field in FIELDS:
        for key in field.keys:
            assert key in keys or key in PRESET_ONLY_KEYS, f"{field.label}: {key}"
    for key in ["no-mmproj", "no-mmproj-auto", "mmproj-auto", "hf-repo", "hf", "np", "LLAMA_ARG_NO_JINJA"]:
        assert key in keys
    assert "mmap" not in keys  # the reference: this tree has no --mmap, so `mmap = 1` is an unknown key
    for key in keys:
        validate_key(key, keys)


# ---- whole sections ----


def test_validate_mapping_normalises_and_drops_blanks() -> None:
    out = validate_mapping(
        {"model": "/m/x.gguf", "c": "4096", "fa": "true", "tags": "", "mmproj": "off", "no-mmproj-auto": "0"},
        None,
    )
    assert out == {"model": "/m/x.gguf", "c": "4096", "fa": "on", "no-mmproj": "true"}


def test_validate_mapping_keeps_a_bare_projector_name_as_written() -> None:
    assert validate_mapping({"mmproj": "p.gguf"}, None) == {"mmproj": "p.gguf"}


def test_validate_mapping_refuses_the_first_problem() -> None:
    with pytest.raises(PresetError, match="Context size"):
        validate_mapping({"model": "/x", "ctx-size": "big"}, None)
    with pytest.raises(PresetError, match="unknown key"):
        validate_mapping({"model": "/x", "mmap": "1"}, frozenset({"model"}))
    with pytest.raises(PresetError, match="no quoting"):
        validate_mapping({"alias": "a;b"}, None)
    with pytest.raises(PresetError, match="Projector search"):
        validate_mapping({"no-mmproj": "sometimes"}, None)


def test_read_form_reads_every_spelling_with_the_router_rule() -> None:
    section = {
        "m": "/models/g/g.gguf",
        "c": "1024",
        "ctx-size": "2048",  # sorts after "c": wins
        "n-gpu-layers": "10",
        "ngl": "20",  # sorts after "n-gpu-layers": wins
        "mmproj": "/models/g/mmproj.gguf",
        "no-jinja": "true",
        "spec-type": "none",
        "fa": "enabled",
        "LLAMA_ARG_ALIAS": "x",
    }
    form = read_form(section)
    assert form["model"] == "/models/g/g.gguf"
    assert form["ctx-size"] == "2048"
    assert form["n-gpu-layers"] == "20"
    assert form["mmproj"] == "mmproj.gguf"  # beside the weights: shown by name
    assert form["jinja"] == "false"
    assert form["spec-type"] == OFF
    assert form["flash-attn"] == "enabled"
    assert form["alias"] == "x"
    assert form["parallel"] == ""
    assert set(form) == set(FIELDS_BY_KEY)


def test_read_form_shows_a_turned_off_projector() -> None:
    assert read_form({"model": "/m/x.gguf", "no-mmproj": "true"})["mmproj"] == OFF
    assert read_form({"model": "/m/x.gguf", "mmproj-auto": "off"})["mmproj"] == OFF
    assert read_form({"model": "/m/x.gguf", "no-mmproj": "false"})["mmproj"] == ""
    assert read_form({"model": "/m/x.gguf", "mmproj": "/elsewhere/p.gguf"})["mmproj"] == "/elsewhere/p.gguf"


def test_apply_form_writes_the_long_key_and_drops_other_spellings() -> None:
    current = {"m": "/models/g/g.gguf", "ngl": "20", "c": "1024", "future-key": "kept", "no-jinja": "true"}
    out = apply_form(current, {"n-gpu-layers": "30", "ctx-size": "", "jinja": "on", "parallel": "1"})
    assert out == {
        "m": "/models/g/g.gguf",
        "future-key": "kept",
        "n-gpu-layers": "30",
        "jinja": "true",
        "parallel": "1",
    }


def test_apply_form_projector() -> None:
    base = {"model": "/models/g/g.gguf", "mmproj": "/models/g/old.gguf"}
    assert apply_form(base, {"mmproj": "mmproj-F16.gguf"})["mmproj"] == "/models/g/mmproj-F16.gguf"
    assert apply_form(base, {"mmproj": "/x/p.gguf"})["mmproj"] == "/x/p.gguf"
    assert apply_form(base, {"mmproj": "off"}) == {"model": "/models/g/g.gguf", "no-mmproj": "true"}
    assert apply_form({**base, "no-mmproj": "true"}, {"mmproj": "p.gguf"}) == {
        "model": "/models/g/g.gguf",
        "mmproj": "/models/g/p.gguf",
    }
    assert apply_form(base, {"mmproj": ""}) == {"model": "/models/g/g.gguf"}
    found = apply_form(base, {"mmproj": ""}, found_mmproj="/models/g/mmproj.gguf")
    assert found["mmproj"] == "/models/g/mmproj.gguf"
    # the model moves in the same edit: a bare projector name follows it
    moved = apply_form(base, {"model": "/new/m.gguf", "mmproj": "p.gguf"})
    assert moved["mmproj"] == "/new/p.gguf"


def test_apply_form_refuses_a_bare_projector_without_a_model_path() -> None:
    with pytest.raises(PresetError, match="full path"):
        apply_form({"hf-repo": "org/repo:Q4_K_M"}, {"mmproj": "p.gguf"})
    assert resolve_mmproj("p.gguf", "/m/x.gguf") == "/m/p.gguf"
    assert resolve_mmproj("", None) == ""


def test_apply_form_refuses_bad_values_and_unknown_fields() -> None:
    with pytest.raises(PresetError, match="Slots"):
        apply_form({}, {"parallel": "0"})
    with pytest.raises(PresetError, match="not a field"):
        apply_form({}, {"c": "1"})


def test_form_round_trip_through_the_ini() -> None:
    doc = PresetDoc.parse("[g]\nmodel = /models/g/g.gguf ; weights\n# keep me\nfuture = 1\n")
    current = doc.get("g")
    assert current is not None
    form = {"ctx-size": "8192", "mmproj": "mmproj.gguf", "spec-type": "off", "alias": "a,b"}
    new_keys = validate_mapping(apply_form(current, form), None)
    edited = doc.replace_section("g", new_keys)
    assert edited.text() == (
        "[g]\nmodel = /models/g/g.gguf ; weights\n# keep me\nfuture = 1\n"
        "ctx-size = 8192\nspec-type = none\nalias = a, b\nmmproj = /models/g/mmproj.gguf\n"
    )
    again = read_form(edited.get("g") or {})
    assert {k: again[k] for k in form} == {
        "ctx-size": "8192",
        "mmproj": "mmproj.gguf",
        "spec-type": "off",
        "alias": "a, b",
    }


# ---- drafting ----


@pytest.mark.parametrize(
    ("nextn", "current", "has_draft", "expected"),
    [
        (1, None, False, "draft-mtp"),  # the file has MTP layers: draft with them
        (3, "", False, "draft-mtp"),
        (0, None, False, ""),  # none: never ask for it (llama-server would exit)
        (None, None, False, ""),  # unknown: add nothing
        (1, "off", False, "none"),  # turned off stays off
        (1, "none", False, "none"),
        (0, "draft-mtp", False, ""),  # asked for on a file without layers: dropped
        (0, "draft-mtp", True, "draft-mtp"),  # ... unless a draft head beside it provides them
        (None, "draft-mtp", False, "draft-mtp"),  # unknown: kept
        (0, "ngram-mod", False, "ngram-mod"),
    ],
)
def test_mtp_default(nextn: int | None, current: str | None, has_draft: bool, expected: str) -> None:
    assert mtp_default(nextn, current, has_draft=has_draft) == expected
