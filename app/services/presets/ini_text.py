"""A text-preserving editor for the router's preset INI file (`--models-preset`).

The file is the configuration of every model a router serves, and other tools (or people) write it too, so it is
edited as text: every line llamaherd does not mean to change comes back byte for byte, including comments, odd
spacing, keys a later llama.cpp added and the line endings (`\\n`, `\\r\\n`, `\\r`, or none at the end).

The model of the file follows the router's parser (`common/preset.cpp`, reference §4.1):

- lines are headers `[name]`, `key = value`, comments (`;` or `#`) or blank; anything else makes the router refuse
  the whole file, so such lines are kept as they are and reported by `PresetDoc.problems()`;
- the lines before the first header are the *preamble*; keys there belong to the section `default`;
- a repeated key: the last value wins; a repeated header restarts the section (the earlier keys are discarded),
  so edits act on the last occurrence of a section;
- a value runs to the first `;` or `#` (or the end of the line), without trailing blanks: there is no quoting,
  so a value can never contain `;`, `#` or a line break. A blank value means "unset" and is never written.

Everything here is pure: no I/O, and every edit returns a new `PresetDoc`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum

from app.services.core.errors import PresetInputError, SectionExists

GLOBAL_SECTION = "*"
"""`[*]`: cascaded under every model of every source (INI, models-dir, cache)."""

DEFAULT_SECTION = "default"
"""The router's name for keys written before the first header (and for an explicit `[default]`)."""

_KEY_RE = re.compile(r"[a-zA-Z_][a-zA-Z0-9_.-]*")
_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)")
# The router's PEG grammar, one line at a time. Its repetitions never backtrack, hence the possessive `*+`:
# `[ name ]` is the section "name " (the name swallows the blank before `]`).
_HEADER_RE = re.compile(r"\[[ \t]*+(?P<name>[^\]]+)\][ \t]*+(?:[;#].*)?", re.DOTALL)
_KV_RE = re.compile(
    r"(?P<key>[a-zA-Z_][a-zA-Z0-9_.-]*+)[ \t]*+=[ \t]*+(?P<value>(?:(?![ \t]*+(?:[;#]|\Z)).)*)[ \t]*+(?:[;#].*)?",
    re.DOTALL,
)
_COMMENT_RE = re.compile(r"[ \t]*+[;#].*", re.DOTALL)
_BLANK_RE = re.compile(r"[ \t]*")
_FORBIDDEN_VALUE_CHARS = (";", "#", "\n", "\r")
_TAG_RE = re.compile(r"[-.]([A-Z0-9_]+)$", re.IGNORECASE)


class LineKind(StrEnum):
    HEADER = "header"
    KEY = "key"
    COMMENT = "comment"
    BLANK = "blank"
    INVALID = "invalid"  # a line the router cannot parse: it refuses the whole file


@dataclass(frozen=True)
class Line:
    """One physical line: `text` without its ending, `eol` the ending as found ("" on a last line without one)."""

    text: str
    eol: str
    kind: LineKind
    name: str = ""  # HEADER: the section name as the router reads it
    key: str = ""  # KEY
    value: str = ""  # KEY: the value as the router reads it
    value_start: int = 0  # KEY: where the value sits in `text`, so it can be replaced in place
    value_end: int = 0

    @property
    def raw(self) -> str:
        return self.text + self.eol


@dataclass(frozen=True)
class Block:
    """The preamble (`name is None`: lines before the first header) or a header line with the lines below it."""

    name: str | None
    lines: tuple[Line, ...]

    @property
    def router_name(self) -> str:
        return DEFAULT_SECTION if self.name is None else self.name

    @property
    def key_lines(self) -> tuple[Line, ...]:
        return tuple(line for line in self.lines if line.kind is LineKind.KEY)

    def keys(self) -> dict[str, str]:
        """This block's keys, last value winning, in order of first appearance."""
        return {line.key: line.value for line in self.key_lines}

    def text(self) -> str:
        return "".join(line.raw for line in self.lines)


# ---- parsing ----


def parse_line(text: str, eol: str) -> Line:
    """Classify one line (without its ending) the way the router's grammar does."""
    if m := _HEADER_RE.fullmatch(text):
        return Line(text, eol, LineKind.HEADER, name=m["name"])
    if m := _KV_RE.fullmatch(text):
        return Line(
            text,
            eol,
            LineKind.KEY,
            key=m["key"],
            value=m["value"],
            value_start=m.start("value"),
            value_end=m.end("value"),
        )
    if _COMMENT_RE.fullmatch(text):
        return Line(text, eol, LineKind.COMMENT)
    if _BLANK_RE.fullmatch(text):
        return Line(text, eol, LineKind.BLANK)
    return Line(text, eol, LineKind.INVALID)


def split_lines(text: str) -> list[tuple[str, str]]:
    """(text, ending) pairs. Only `\\r\\n`, `\\r` and `\\n` end a line (`str.splitlines` knows many more)."""
    out: list[tuple[str, str]] = []
    pos = 0
    for m in _LINE_RE.finditer(text):
        raw = m.group()
        body = raw.rstrip("\r\n")
        out.append((body, raw[len(body) :]))
        pos = m.end()
    if pos < len(text):
        out.append((text[pos:], ""))
    return out


def _group_blocks(lines: Iterable[Line]) -> tuple[Block, ...]:
    blocks: list[Block] = []
    name: str | None = None
    current: list[Line] = []
    for line in lines:
        if line.kind is LineKind.HEADER:
            blocks.append(Block(name, tuple(current)))
            name, current = line.name, [line]
        else:
            current.append(line)
    blocks.append(Block(name, tuple(current)))
    return tuple(blocks)


# ---- the document ----


@dataclass(frozen=True)
class PresetDoc:
    """A parsed preset file. `blocks[0]` is always the preamble (possibly empty)."""

    blocks: tuple[Block, ...]

    @classmethod
    def parse(cls, text: str) -> PresetDoc:
        return cls(_group_blocks(parse_line(body, eol) for body, eol in split_lines(text)))

    def text(self) -> str:
        return "".join(block.text() for block in self.blocks)

    @property
    def preamble(self) -> Block:
        return self.blocks[0]

    def lines(self) -> tuple[Line, ...]:
        return tuple(line for block in self.blocks for line in block.lines)

    def line_ending(self) -> str:
        """The file's dominant line ending ("\\n" for a file that has none yet)."""
        counts = Counter(line.eol for line in self.lines() if line.eol)
        return counts.most_common(1)[0][0] if counts else "\n"

    def problems(self) -> list[str]:
        """Lines the router cannot parse (it then refuses the whole file), as `line N: why`."""
        out = []
        for number, line in enumerate(self.lines(), start=1):
            if line.kind is not LineKind.INVALID:
                continue
            why = "not a header, key = value, comment or blank line"
            if line.text[:1] in (" ", "\t") and _KV_RE.fullmatch(line.text.lstrip(" \t")):
                why = "keys must start at the beginning of the line"
            out.append(f"line {number}: {why}: {line.text!r}")
        return out

    # ---- queries ----

    def sections(self) -> dict[str, dict[str, str]]:
        """Section → keys, by the router's rules: a repeated header restarts the section, the last value wins.

        The preamble's keys are the section `default`. A `default` section whose only key is `version` (or that
        has no key) is left out, as the router leaves it out.
        """
        result: dict[str, dict[str, str]] = {}
        for block in self.blocks:
            if block.name is not None:
                result.pop(block.name, None)  # restart, and move it to where it now begins
                result[block.name] = {}
            for line in block.key_lines:
                result.setdefault(block.router_name, {})[line.key] = line.value
        default = result.get(DEFAULT_SECTION)
        if default is not None and not set(default) - {"version"}:
            del result[DEFAULT_SECTION]
        return result

    def section_names(self) -> list[str]:
        """Every section with effect, `*` included, in the order the effective sections begin."""
        return list(self.sections())

    def model_names(self) -> list[str]:
        """The sections that are models (every section but `*`)."""
        return [name for name in self.sections() if name != GLOBAL_SECTION]

    def get(self, section: str) -> dict[str, str] | None:
        return self.sections().get(section)

    def has_section(self, section: str) -> bool:
        return section in self.sections()

    def _target(self, section: str) -> int | None:
        """Index of the block an edit of `section` acts on: its last header (the one with effect)."""
        for index in range(len(self.blocks) - 1, -1, -1):
            block = self.blocks[index]
            if block.name == section:
                return index
            if block.name is None and section == DEFAULT_SECTION and block.key_lines:
                return index
        return None

    def _with_section(self, index: int, lines: Iterable[Line]) -> PresetDoc:
        blocks = list(self.blocks)
        blocks[index] = replace(blocks[index], lines=tuple(lines))
        return PresetDoc(tuple(blocks))

    # ---- edits (each returns a new document) ----

    def set_key(self, section: str, key: str, value: str) -> PresetDoc:
        """Set one key. An existing line keeps its spacing and trailing comment; a new line goes after the
        section's last key. A blank value unsets the key. A missing section is added."""
        check_key(key)
        value = normalise_value(value)
        if not value:
            return self.unset_key(section, key)
        index = self._target(section)
        if index is None:
            return self.add_section(section, {key: value})
        lines = _set_in_lines(list(self.blocks[index].lines), key, value, self.line_ending())
        return self._with_section(index, lines)

    def unset_key(self, section: str, key: str) -> PresetDoc:
        """Remove every line of `key` in the section (its last occurrence: the one with effect)."""
        index = self._target(section)
        if index is None:
            return self
        block = self.blocks[index]
        kept = [line for line in block.lines if not (line.kind is LineKind.KEY and line.key == key)]
        if len(kept) == len(block.lines):
            return self
        return self._with_section(index, kept)

    def replace_section(self, section: str, mapping: Mapping[str, str]) -> PresetDoc:
        """Make the section's keys exactly `mapping` (blank values mean absent). Comments inside stay;
        keys already there keep their lines; new keys are added after the last key, in mapping order.
        A missing section is added."""
        wanted = _checked_mapping(mapping)
        index = self._target(section)
        if index is None:
            return self.add_section(section, wanted)
        eol = self.line_ending()
        lines = [
            line for line in self.blocks[index].lines if not (line.kind is LineKind.KEY and line.key not in wanted)
        ]
        for key, value in wanted.items():
            lines = _set_in_lines(lines, key, value, eol)
        return self._with_section(index, lines)

    def add_section(self, section: str, mapping: Mapping[str, str]) -> PresetDoc:
        """Append `[section]` with its keys at the end of the file, one blank line before it."""
        check_section_name(section)
        wanted = _checked_mapping(mapping)
        if self.has_section(section) or any(block.name == section for block in self.blocks):
            raise SectionExists(section)
        eol = self.line_ending()
        blocks = list(self.blocks)
        last = list(blocks[-1].lines)
        if last and not last[-1].eol:
            last[-1] = replace(last[-1], eol=eol)  # the file had no final line ending
        if any(line.text.strip(" \t") for block in blocks for line in block.lines) and (
            not last or last[-1].kind is not LineKind.BLANK
        ):
            last.append(Line("", eol, LineKind.BLANK))
        blocks[-1] = replace(blocks[-1], lines=tuple(last))
        new_lines = [parse_line(f"[{section}]", eol)]
        new_lines += [parse_line(f"{key} = {value}", eol) for key, value in wanted.items()]
        blocks.append(Block(section, tuple(new_lines)))
        return PresetDoc(tuple(blocks))

    def remove_section(self, section: str) -> PresetDoc:
        """Remove the section: its header, keys and comment lines up to the next header, in every occurrence
        (an earlier one would otherwise come back into effect). For `default`, the preamble's key lines go
        (but `version`), its comments stay. A missing section is no change."""
        blocks: list[Block] = []
        for block in self.blocks:
            if block.name is None and section == DEFAULT_SECTION:
                blocks.append(replace(block, lines=tuple(ln for ln in block.lines if not _is_model_key(ln))))
            elif block.name != section:
                blocks.append(block)
        return PresetDoc(tuple(blocks))


def _is_model_key(line: Line) -> bool:
    return line.kind is LineKind.KEY and line.key != "version"


def _set_in_lines(lines: list[Line], key: str, value: str, eol: str) -> list[Line]:
    """Set `key` in one block's lines: in place on its last line, or as a new line after the last key line."""
    positions = [i for i, line in enumerate(lines) if line.kind is LineKind.KEY and line.key == key]
    if positions:
        i = positions[-1]
        old = lines[i]
        lines[i] = parse_line(old.text[: old.value_start] + value + old.text[old.value_end :], old.eol)
        return lines
    anchor = _insertion_point(lines)
    return _insert_line(lines, anchor, f"{key} = {value}", eol)


def _insertion_point(lines: list[Line]) -> int:
    """Index of the line a new key goes after: the last key line, else the header; -1 means "at the start".

    Comment and blank lines after the last key belong to the gap before the next section, so new keys go above
    them. A preamble without keys gets them after its leading comments, above its trailing blank lines.
    """
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].kind in (LineKind.KEY, LineKind.HEADER):
            return i
    i = len(lines) - 1
    while i >= 0 and lines[i].kind is LineKind.BLANK:
        i -= 1
    return i


def _insert_line(lines: list[Line], after: int, text: str, eol: str) -> list[Line]:
    if after >= 0 and not lines[after].eol:
        # appending below a last line that had no ending: give it one, and keep the file's missing final ending
        lines[after] = replace(lines[after], eol=eol)
        new = parse_line(text, "")
    else:
        new = parse_line(text, eol)
    return [*lines[: after + 1], new, *lines[after + 1 :]]


# ---- grammar checks (the engine never writes a line the router would misread) ----


def check_key(key: str) -> str:
    if not _KEY_RE.fullmatch(key):
        raise PresetInputError(
            f"key {key!r}: a key is a letter or '_' followed by letters, digits, '_', '.' or '-'", key=key
        )
    return key


def normalise_value(value: str) -> str:
    """The value as the router would read it back; refuses what the INI format cannot hold."""
    for char in _FORBIDDEN_VALUE_CHARS:
        if char in value:
            raise PresetInputError(
                f"value {value!r}: values cannot contain ';', '#' or a line break: the INI format has no quoting"
            )
    return value.strip(" \t")


_NOT_IN_SECTION_NAMES = frozenset(";#[]=\"'")


def check_section_name(name: str) -> str:
    if not name:
        raise PresetInputError("section name is empty")
    if "]" in name:
        raise PresetInputError(f"section name {name!r} cannot contain ']'")
    if "\n" in name or "\r" in name:
        raise PresetInputError(f"section name {name!r} cannot contain a line break")
    if name != name.strip():
        raise PresetInputError(f"section name {name!r} cannot begin or end with blanks")
    return name


def check_new_model_name(name: str) -> str:
    """A section this edit makes (a new model): its name is the model's name in requests and in the router's log
    lines, where a blank, ';' or '#' (a comment to an INI reader), '[' or '=' made a model whose lines showed its
    port (`[36547]`) instead. A section the file already has keeps its name, whatever it is (it is edited as text)."""
    check_section_name(name)
    bad = sorted({c for c in name if c.isspace() or c in _NOT_IN_SECTION_NAMES or not c.isprintable()})
    if bad and name != GLOBAL_SECTION:
        shown = ", ".join(repr(c) for c in bad)
        raise PresetInputError(
            f"section name {name!r} cannot contain {shown}: a model's name is letters, digits and . _ - : / @ +"
        )
    return name


def _checked_mapping(mapping: Mapping[str, str]) -> dict[str, str]:
    """Keys checked, values normalised, blank values dropped (blank means unset)."""
    out: dict[str, str] = {}
    for key, value in mapping.items():
        check_key(key)
        normalised = normalise_value(value)
        if normalised:
            out[key] = normalised
    return out


def router_name(section: str) -> str:
    """The model name the router lists for a section: after the last `:`, a quantisation tag is canonicalised
    (`org/repo:q4_k_m` → `org/repo:Q4_K_M`, `repo:model-q8_0` → `repo:Q8_0`), as it does to match cache names."""
    if section in (GLOBAL_SECTION, DEFAULT_SECTION) or ":" not in section:
        return section
    head, _, tag = section.rpartition(":")
    m = _TAG_RE.search(tag)
    return f"{head}:{(m.group(1) if m else tag).upper()}"
