"""Router log lines as kept in memory: one compact, immutable LogLine each, and the parts a packed scrollback stores."""

from __future__ import annotations

from app.services.core.shared_values import SharedValues

# The time's place in a line is nearly always the same few (after a child's "[port] " prefix, or at 0), but each
# packed offset past 0 was a new 32-byte int per line: one shared object per value instead. Bound: PACKED_KEPT.
PACKED_KEPT = 4096
packed_ints: SharedValues[int] = SharedValues(PACKED_KEPT)


# What LogLine.parts() returns: _text, _time, level, source, port, model, skipped.
LogLineParts = tuple[int | str, int | str, str, str, int | None, str | None, int]


SKIPPED_SOURCE = "skipped"  # LogLine.source of the follower's "N lines skipped" marker


class LogLine:
    """One parsed router log line. `model` is set for a child line whose port is known.

    Compact, because a scrollback may hold 100,000 of them: slots (a __dict__ cost ~300 bytes a line), and
    `text` and `time`, nearly always slices of `raw`, kept as offsets into it rather than as copies (they doubled
    the cost of a line). Immutable, compared and hashed by value, like the frozen dataclass it replaced."""

    __slots__ = ("_text", "_time", "level", "model", "port", "raw", "skipped", "source")
    raw: str
    level: str  # "I", "W", "E", "D" or "" when the build prints none
    source: str  # "router", "child", or "skipped" for a follower's marker that lines went by unparsed
    port: int | None
    model: str | None
    skipped: int  # on a "skipped" marker: how many lines it stands for
    _text: int | str  # an offset into raw, or the text itself when it is not raw's tail
    _time: int | str  # offset << 8 | length in raw (an int costs less than a tuple), or the time itself

    def __init__(self, raw: str, text: str, level: str = "", time: str = "", source: str = "router",
                 port: int | None = None, model: str | None = None, skipped: int = 0) -> None:  # fmt: skip
        put = object.__setattr__
        put(self, "raw", raw)
        put(self, "_text", len(raw) - len(text) if text and raw.endswith(text) else text)
        at = raw.find(time) if time else -1
        put(self, "_time", packed_ints(at << 8 | len(time)) if at >= 0 and len(time) < 256 else time)
        put(self, "level", level)
        put(self, "source", source)
        put(self, "port", port)
        put(self, "model", model)
        put(self, "skipped", skipped)

    @property
    def text(self) -> str:
        t = self._text
        return self.raw[t:] if isinstance(t, int) else t

    @property
    def time(self) -> str:
        """The time as printed ("M.SS.mmm.uuu"), when present."""
        t = self._time
        return self.raw[t >> 8 : (t >> 8) + (t & 255)] if isinstance(t, int) else t

    def _key(self) -> tuple[object, ...]:
        return (self.raw, self.text, self.level, self.time, self.source, self.port, self.model, self.skipped)

    def parts(self) -> LogLineParts:
        """Everything but `raw`, as stored: a packed scrollback keeps one of these per kind of line, not per line."""
        return (self._text, self._time, self.level, self.source, self.port, self.model, self.skipped)

    @classmethod
    def from_parts(cls, raw: str, parts: LogLineParts) -> LogLine:
        """The line `parts()` was taken from, given its raw text again (no parsing, no offsets computed). Slot by
        slot through the slots' own setters: a loop over object.__setattr__ took ~3.4 us a line, a scan of a
        100,000-line scrollback 0.35 s."""
        ln = _new_line(cls)
        _put_raw(ln, raw)
        _put_text(ln, parts[0])
        _put_time(ln, parts[1])
        _put_level(ln, parts[2])
        _put_source(ln, parts[3])
        _put_port(ln, parts[4])
        _put_model(ln, parts[5])
        _put_skipped(ln, parts[6])
        return ln

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"LogLine is immutable: cannot set {name}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LogLine) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        names = ("raw", "text", "level", "time", "source", "port", "model", "skipped")
        return "LogLine(" + ", ".join(f"{n}={v!r}" for n, v in zip(names, self._key(), strict=True)) + ")"


_new_line = object.__new__
_put_raw = LogLine.__dict__["raw"].__set__
_put_text = LogLine.__dict__["_text"].__set__
_put_time = LogLine.__dict__["_time"].__set__
_put_level = LogLine.__dict__["level"].__set__
_put_source = LogLine.__dict__["source"].__set__
_put_port = LogLine.__dict__["port"].__set__
_put_model = LogLine.__dict__["model"].__set__
_put_skipped = LogLine.__dict__["skipped"].__set__
