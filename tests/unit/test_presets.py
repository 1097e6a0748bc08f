"""The preset INI engine: parsing as the router does, byte-exact text, and edits that touch only their section."""

from __future__ import annotations

import pytest

from app.services.core.errors import PresetError
from app.services.presets.diff import changed_sections, unified_diff
from app.services.presets.ini_text import (
    DEFAULT_SECTION,
    GLOBAL_SECTION,
    LineKind,
    PresetDoc,
    parse_line,
    router_name,
    split_lines,
)

SAMPLE = (
    "; llamaherd presets\n"
    "version = 1\n"
    "\n"
    "[*]\n"
    "c = 8192 ; every model\n"
    "n-gpu-layers = 99\n"
    "\n"
    "[gemma]\n"
    "model   =   /models/gemma/gemma-Q4_K_M.gguf\n"
    "# the projector sits beside it\n"
    "mmproj=/models/gemma/mmproj-F16.gguf\n"
    "alias = g3, gemma3\n"
    "\n"
    "; qwen is big\n"
    "[qwen]\n"
    "model = /models/qwen.gguf\n"
    "ctx-size = 4096\n"
    "ctx-size = 16384\n"
    "future-key = kept as it is\n"
)


def doc() -> PresetDoc:
    return PresetDoc.parse(SAMPLE)


# ---- parsing ----


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n",
        "[a]",
        "[a]\r\nk = v\r\n",
        "[a]\rk = v\rj=w",
        "[a]\nk = v",  # no final newline
        "\r\n\n\r",
        "  ; indented comment\n\t# tab comment\n",
        "[a] ; header comment\nk=v#c\nk2 = v2 ;c\n",
        "garbage line\n[a]\n  indented = key\n",
        SAMPLE,
    ],
)
def test_text_is_identity(text: str) -> None:
    assert PresetDoc.parse(text).text() == text


def test_split_lines_only_knows_three_line_endings() -> None:
    assert split_lines("a\x0bb\x0cc\u2028d\r\ne\rf\ng") == [
        ("a\x0bb\x0cc\u2028d", "\r\n"),
        ("e", "\r"),
        ("f", "\n"),
        ("g", ""),
    ]


def test_line_kinds_follow_the_router_grammar() -> None:
    assert parse_line("[a]", "").kind is LineKind.HEADER
    assert parse_line("[ a b ] ; c", "").name == "a b "  # leading blanks dropped, trailing kept
    assert parse_line("[ ]", "").kind is LineKind.INVALID  # a name needs one character
    assert parse_line("[a]x", "").kind is LineKind.INVALID
    line = parse_line("key.x-y_z  =  some value  # comment", "")
    assert (line.kind, line.key, line.value) == (LineKind.KEY, "key.x-y_z", "some value")
    assert parse_line("k =", "").value == ""
    assert parse_line("k = a;b", "").value == "a"
    assert parse_line("k = [x] = y", "").value == "[x] = y"
    assert parse_line(" k = v", "").kind is LineKind.INVALID  # keys start at column 0
    assert parse_line("1k = v", "").kind is LineKind.INVALID
    assert parse_line("   ", "").kind is LineKind.BLANK
    assert parse_line(" ;x", "").kind is LineKind.COMMENT


def test_sections_and_effective_keys() -> None:
    d = doc()
    assert d.section_names() == [GLOBAL_SECTION, "gemma", "qwen"]
    assert d.model_names() == ["gemma", "qwen"]
    assert d.get("qwen") == {"model": "/models/qwen.gguf", "ctx-size": "16384", "future-key": "kept as it is"}
    assert d.get("gemma") == {
        "model": "/models/gemma/gemma-Q4_K_M.gguf",
        "mmproj": "/models/gemma/mmproj-F16.gguf",
        "alias": "g3, gemma3",
    }
    assert d.get("*") == {"c": "8192", "n-gpu-layers": "99"}
    assert d.get("missing") is None
    assert d.has_section("gemma") and not d.has_section("missing")
    assert d.preamble.name is None and d.preamble.keys() == {"version": "1"}


def test_a_repeated_header_restarts_the_section() -> None:
    d = PresetDoc.parse("[a]\nx = 1\ny = 2\n[b]\nz = 3\n[a]\nx = 9\n")
    assert d.get("a") == {"x": "9"}
    assert d.section_names() == ["b", "a"]  # a begins again after b
    edited = d.set_key("a", "y", "5")
    assert edited.text() == "[a]\nx = 1\ny = 2\n[b]\nz = 3\n[a]\nx = 9\ny = 5\n"
    assert edited.get("a") == {"x": "9", "y": "5"}


def test_preamble_keys_are_the_default_section() -> None:
    assert not PresetDoc.parse("version = 1\n[a]\n").has_section(DEFAULT_SECTION)
    d = PresetDoc.parse("c = 1\n[a]\n")
    assert d.get(DEFAULT_SECTION) == {"c": "1"}
    assert d.set_key(DEFAULT_SECTION, "c", "2").text() == "c = 2\n[a]\n"
    assert d.remove_section(DEFAULT_SECTION).text() == "[a]\n"
    versioned = PresetDoc.parse("; c\nversion = 1\nc = 1\n[a]\n")
    assert versioned.remove_section(DEFAULT_SECTION).text() == "; c\nversion = 1\n[a]\n"  # version stays
    # an explicit [default] restarts it: the preamble's keys are discarded
    assert PresetDoc.parse("c = 1\n[default]\nm = x\n").get(DEFAULT_SECTION) == {"m": "x"}


def test_problems_name_the_lines_the_router_refuses() -> None:
    d = PresetDoc.parse("[a]\n  k = v\nplain\n")
    problems = d.problems()
    assert len(problems) == 2
    assert problems[0].startswith("line 2: keys must start")
    assert problems[1].startswith("line 3:")
    assert doc().problems() == []


def test_line_ending_is_the_dominant_one() -> None:
    assert PresetDoc.parse("").line_ending() == "\n"
    assert PresetDoc.parse("a=1\r\nb=2\r\nc=3\n").line_ending() == "\r\n"


# ---- edits ----


def test_set_key_replaces_in_place_keeping_spacing_and_comment() -> None:
    d = doc().set_key("gemma", "model", "/other.gguf")
    assert "model   =   /other.gguf\n" in d.text()
    d = doc().set_key("*", "c", "4096")
    assert "c = 4096 ; every model\n" in d.text()
    d = PresetDoc.parse("[a]\nk =;comment\n").set_key("a", "k", "v")
    assert d.text() == "[a]\nk =v;comment\n"
    assert d.get("a") == {"k": "v"}


def test_set_key_on_a_duplicate_key_sets_the_last_line() -> None:
    d = doc().set_key("qwen", "ctx-size", "32768")
    assert "ctx-size = 4096\nctx-size = 32768\n" in d.text()
    assert d.get("qwen")["ctx-size"] == "32768"  # type: ignore[index]


def test_set_key_appends_after_the_last_key_before_the_gap() -> None:
    d = doc().set_key("gemma", "ctx-size", "8192")
    assert "alias = g3, gemma3\nctx-size = 8192\n\n; qwen is big\n[qwen]" in d.text()


def test_set_key_in_an_empty_section_goes_below_the_header() -> None:
    d = PresetDoc.parse("[a]\n; note\n\n[b]\n").set_key("a", "k", "v")
    assert d.text() == "[a]\nk = v\n; note\n\n[b]\n"


def test_set_key_keeps_a_missing_final_newline() -> None:
    d = PresetDoc.parse("[a]\nk = v").set_key("a", "j", "w")
    assert d.text() == "[a]\nk = v\nj = w"
    d = PresetDoc.parse("[a]\r\nk = v").set_key("a", "j", "w")
    assert d.text() == "[a]\r\nk = v\r\nj = w"


def test_new_lines_use_the_dominant_line_ending() -> None:
    d = PresetDoc.parse("[a]\r\nk = v\r\n[b]\r\n").set_key("a", "j", "w")
    assert d.text() == "[a]\r\nk = v\r\nj = w\r\n[b]\r\n"


def test_set_key_strips_blanks_and_blank_means_unset() -> None:
    assert doc().set_key("gemma", "alias", "  x  ").get("gemma")["alias"] == "x"  # type: ignore[index]
    assert doc().set_key("gemma", "alias", "").text() == doc().unset_key("gemma", "alias").text()
    assert doc().set_key("gemma", "alias", " \t ").get("gemma") == doc().unset_key("gemma", "alias").get("gemma")


def test_set_key_on_a_missing_section_adds_it() -> None:
    d = doc().set_key("new", "model", "/n.gguf")
    assert d.text() == SAMPLE + "\n[new]\nmodel = /n.gguf\n"


def test_unset_key_removes_every_line_of_the_key() -> None:
    d = doc().unset_key("qwen", "ctx-size")
    assert "ctx-size" not in d.text()
    assert doc().unset_key("qwen", "absent").text() == SAMPLE
    assert doc().unset_key("absent", "model").text() == SAMPLE


def test_replace_section_sets_removes_and_keeps_comments() -> None:
    d = doc().replace_section("gemma", {"model": "/m.gguf", "ctx-size": "4096", "tags": "", "mmproj": "/p.gguf"})
    assert d.get("gemma") == {"model": "/m.gguf", "mmproj": "/p.gguf", "ctx-size": "4096"}
    assert (
        "[gemma]\nmodel   =   /m.gguf\n# the projector sits beside it\nmmproj=/p.gguf\nctx-size = 4096\n\n; qwen is big"
        in d.text()
    )
    assert d.text().startswith(SAMPLE[: SAMPLE.index("[gemma]")])
    assert d.text().endswith(SAMPLE[SAMPLE.index("; qwen is big") :])


def test_replace_section_of_a_missing_section_adds_it() -> None:
    assert doc().replace_section("x", {"model": "/x.gguf"}).get("x") == {"model": "/x.gguf"}


def test_add_section_appends_with_one_blank_line() -> None:
    d = PresetDoc.parse("[a]\nk = v").add_section("b", {"model": "/b.gguf", "empty": ""})
    assert d.text() == "[a]\nk = v\n\n[b]\nmodel = /b.gguf\n"
    d = PresetDoc.parse("[a]\r\nk = v\r\n\r\n").add_section("b", {})
    assert d.text() == "[a]\r\nk = v\r\n\r\n[b]\r\n"
    assert PresetDoc.parse("").add_section("b", {"k": "v"}).text() == "[b]\nk = v\n"


def test_add_section_refuses_an_existing_one() -> None:
    with pytest.raises(PresetError, match="already exists"):
        doc().add_section("gemma", {})


def test_remove_section_takes_header_keys_and_comments_to_the_next_header() -> None:
    d = doc().remove_section("gemma")
    assert d.text() == SAMPLE[: SAMPLE.index("[gemma]")] + SAMPLE[SAMPLE.index("[qwen]") :]
    assert doc().remove_section("absent").text() == SAMPLE


def test_remove_section_removes_every_occurrence() -> None:
    d = PresetDoc.parse("[a]\nx = 1\n[b]\n[a]\nx = 2\n").remove_section("a")
    assert d.text() == "[b]\n"
    assert not d.has_section("a")


def test_edits_return_new_documents() -> None:
    d = doc()
    d.set_key("gemma", "k", "v")
    d.remove_section("qwen")
    assert d.text() == SAMPLE


# ---- refusals ----


@pytest.mark.parametrize("value", ["a;b", "a#b", "a\nb", "a\rb"])
def test_a_value_the_ini_cannot_hold_is_refused(value: str) -> None:
    with pytest.raises(PresetError, match="no quoting"):
        doc().set_key("gemma", "alias", value)
    with pytest.raises(PresetError, match="no quoting"):
        doc().replace_section("gemma", {"alias": value})
    with pytest.raises(PresetError, match="no quoting"):
        doc().add_section("new", {"alias": value})


@pytest.mark.parametrize("key", ["", "1abc", "a b", "a=b", "-x", "ké"])
def test_a_bad_key_is_refused(key: str) -> None:
    with pytest.raises(PresetError, match="key"):
        doc().set_key("gemma", key, "v")


@pytest.mark.parametrize("name", ["", "a]b", "a\nb", " a", "a ", "a\r"])
def test_a_bad_section_name_is_refused(name: str) -> None:
    with pytest.raises(PresetError, match="section name"):
        doc().add_section(name, {})


# ---- reload ----


def test_changed_sections_ignores_alias_host_port_log_colors() -> None:
    old = doc()
    assert changed_sections(old, old) == set()
    new = old.set_key("gemma", "alias", "g").set_key("gemma", "port", "1").set_key("qwen", "log-colors", "on")
    assert changed_sections(old, new) == set()
    assert changed_sections(old, old.set_key("gemma", "tags", "vision")) == {"gemma"}
    assert changed_sections(old, old.set_key("gemma", "load-on-startup", "true")) == {"gemma"}
    assert changed_sections(old, old.remove_section("qwen")) == {"qwen"}
    assert changed_sections(old, old.add_section("new", {"model": "/n.gguf"})) == set()  # nothing ran it yet


def test_a_global_change_reaches_every_model_that_does_not_override_it() -> None:
    old = doc()
    assert changed_sections(old, old.set_key("*", "n-gpu-layers", "10")) == {"*", "gemma", "qwen"}
    assert changed_sections(old, old.set_key("*", "ctx-size", "8192")) == {"*", "gemma"}  # qwen sets its own
    assert changed_sections(old, old.set_key("*", "alias", "x")) == set()


def test_a_duplicate_key_change_with_the_same_effect_is_no_change() -> None:
    old = doc()
    assert changed_sections(old, old.set_key("qwen", "ctx-size", "16384")) == set()


# ---- helpers ----


def test_unified_diff() -> None:
    new = doc().set_key("qwen", "ctx-size", "8192").text()
    diff = unified_diff(SAMPLE, new, "/p/models.ini")
    assert diff.startswith("--- /p/models.ini (current)\n+++ /p/models.ini (new)\n@@")
    assert "\n-ctx-size = 16384\n+ctx-size = 8192\n" in diff
    assert unified_diff(SAMPLE, SAMPLE, "x") == ""
    assert "\\ No newline at end of file" in unified_diff("a\n", "a\nb", "x")


def test_router_name_canonicalises_quantisation_tags() -> None:
    assert router_name("ggml-org/gemma-3-4b-it-GGUF:q4_k_m") == "ggml-org/gemma-3-4b-it-GGUF:Q4_K_M"
    assert router_name("repo:model-q8_0") == "repo:Q8_0"
    assert router_name("plain") == "plain"
    assert router_name("*") == "*"
