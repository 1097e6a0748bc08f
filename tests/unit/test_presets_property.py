"""Generated preset files: the text comes back byte for byte, and an edit of one section changes no byte outside it."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.services.presets.diff import changed_sections
from app.services.presets.ini_text import DEFAULT_SECTION, LineKind, PresetDoc, normalise_value

SECTION_NAMES = ["*", "default", "gemma", "qwen", "org/repo:Q4_K_M", "a b", "m.1", "x"]
KEYS = ["model", "ctx-size", "c", "n-gpu-layers", "alias", "tags", "mmproj", "future-key", "LLAMA_ARG_X", "_k", "a.b"]
EOLS = ["\n", "\r\n", "\r"]
SPACES = st.sampled_from(["", " ", "  ", "\t", " \t"])
VALUE_CHARS = st.characters(codec="utf-8", exclude_characters=";#\r\n")
VALUES = st.text(VALUE_CHARS, max_size=12)
COMMENT_TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\r\n"), max_size=10)

EDIT_SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def comment(draw: st.DrawFn) -> str:
    return draw(SPACES) + draw(st.sampled_from([";", "#"])) + draw(COMMENT_TEXT)


@st.composite
def trailing_comment(draw: st.DrawFn) -> str:
    return draw(st.one_of(st.just(""), st.builds(lambda s, c: s + c, SPACES, comment())))


@st.composite
def header(draw: st.DrawFn) -> str:
    lead = draw(st.sampled_from(["", " ", "\t"]))
    return f"[{lead}{draw(st.sampled_from(SECTION_NAMES))}]{draw(trailing_comment())}"


@st.composite
def key_line(draw: st.DrawFn) -> str:
    key = draw(st.sampled_from(KEYS))
    return f"{key}{draw(SPACES)}={draw(SPACES)}{draw(VALUES)}{draw(trailing_comment())}"


LINE = st.one_of(
    header(),
    key_line(),
    key_line(),
    key_line(),
    comment(),
    SPACES,  # blank lines
    st.sampled_from([" k = indented", "not a line", "[]"]),  # lines the router refuses: kept as they are
)


@st.composite
def preset_text(draw: st.DrawFn) -> str:
    lines = draw(st.lists(LINE, max_size=25))
    eols = draw(st.lists(st.sampled_from(EOLS), min_size=len(lines), max_size=len(lines)))
    text = "".join(line + eol for line, eol in zip(lines, eols, strict=True))
    cut_final_eol = draw(st.booleans())
    if lines and cut_final_eol:
        text = text[: -len(eols[-1])]  # no final line ending
    return text


@st.composite
def text_and_section(draw: st.DrawFn) -> tuple[str, str]:
    """A file and a section name to edit: mostly one the file has, sometimes any name."""
    text = draw(preset_text())
    present = [block.name for block in PresetDoc.parse(text).blocks if block.name in SECTION_NAMES]
    pick_present = draw(st.integers(0, 4)) > 0
    if present and pick_present:
        return text, draw(st.sampled_from(present))
    return text, draw(st.sampled_from(SECTION_NAMES))


def other_blocks(doc: PresetDoc, section: str) -> list[str]:
    """The text of every block that an edit of `section` must leave alone, in order."""
    return [
        block.text()
        for block in doc.blocks
        if block.name != section and not (block.name is None and section == DEFAULT_SECTION)
    ]


def mapping_strategy() -> st.SearchStrategy[dict[str, str]]:
    return st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=5)


@settings(max_examples=800, deadline=None)
@given(preset_text())
def test_parse_then_text_is_identity(text: str) -> None:
    doc = PresetDoc.parse(text)
    assert doc.text() == text
    assert "".join(line.raw for line in doc.lines()) == text
    assert changed_sections(doc, doc) == set()


@EDIT_SETTINGS
@given(text_and_section(), st.sampled_from(KEYS), VALUES)
def test_set_key_touches_only_its_section(case: tuple[str, str], key: str, value: str) -> None:
    text, section = case
    doc = PresetDoc.parse(text)
    edited = PresetDoc.parse(doc.set_key(section, key, value).text())
    if not doc.has_section(section) and doc._target(section) is None and normalise_value(value):
        assert_only_appended(doc, edited)
    else:
        assert other_blocks(edited, section) == other_blocks(doc, section)
    expected = normalise_value(value)
    keys = edited.get(section) or {}
    assert keys.get(key, "") == expected
    for other in (doc.get(section) or {}).keys() - {key}:
        assert keys[other] == doc.get(section)[other]  # type: ignore[index]


@EDIT_SETTINGS
@given(text_and_section(), st.sampled_from(KEYS))
def test_unset_key_touches_only_its_section(case: tuple[str, str], key: str) -> None:
    text, section = case
    doc = PresetDoc.parse(text)
    edited = PresetDoc.parse(doc.unset_key(section, key).text())
    assert other_blocks(edited, section) == other_blocks(doc, section)
    assert key not in (edited.get(section) or {})


@EDIT_SETTINGS
@given(text_and_section(), mapping_strategy())
def test_replace_section_touches_only_its_section(case: tuple[str, str], mapping: dict[str, str]) -> None:
    text, section = case
    doc = PresetDoc.parse(text)
    edited = PresetDoc.parse(doc.replace_section(section, mapping).text())
    wanted = {k: normalise_value(v) for k, v in mapping.items() if normalise_value(v)}
    if doc._target(section) is None:
        assert_only_appended(doc, edited)
    else:
        assert other_blocks(edited, section) == other_blocks(doc, section)
        target = doc.blocks[doc._target(section)]  # type: ignore[index]
        comments = [line.raw for line in target.lines if line.kind is LineKind.COMMENT]
        edited_target = edited.blocks[edited._target(section) or 0] if wanted else None
        if edited_target is not None:
            kept = [line.raw for line in edited_target.lines if line.kind is LineKind.COMMENT]
            assert [c.rstrip("\r\n") for c in kept] == [c.rstrip("\r\n") for c in comments]
    if wanted or section != DEFAULT_SECTION:
        assert (edited.get(section) or {}) == wanted


@EDIT_SETTINGS
@given(text_and_section())
def test_remove_section_touches_only_its_section(case: tuple[str, str]) -> None:
    text, section = case
    doc = PresetDoc.parse(text)
    edited = PresetDoc.parse(doc.remove_section(section).text())
    assert other_blocks(edited, section) == other_blocks(doc, section)
    assert not edited.has_section(section)


@EDIT_SETTINGS
@given(preset_text(), st.sampled_from(["new", "other/model:Q8_0", "z z"]), mapping_strategy())
def test_add_section_only_appends(text: str, section: str, mapping: dict[str, str]) -> None:
    doc = PresetDoc.parse(text)
    edited = PresetDoc.parse(doc.add_section(section, mapping).text())
    assert_only_appended(doc, edited)
    assert edited.get(section) == {k: normalise_value(v) for k, v in mapping.items() if normalise_value(v)}
    for name in doc.section_names():
        assert edited.get(name) == doc.get(name)


def assert_only_appended(doc: PresetDoc, edited: PresetDoc) -> None:
    """No byte of `doc` changed: `edited` is `doc` plus text at the end (after a line ending, if it had none)."""
    before, after = doc.text(), edited.text()
    if before and not before.endswith(("\n", "\r")):
        before += doc.line_ending()
    assert after.startswith(before)
