"""A log scrollback that costs about what its text costs, compressed: the last `maxlen` LogLines, packed.

Lines arrive in the open chunk as they are (LogLine objects, shared with whoever else holds them). Each time it
holds CHUNK lines it is sealed: the raw texts are joined and compressed with zlib, and beside them are kept where
each text ends and which kind of line it is (a kind is everything of a LogLine but its raw text, see
LogLine.parts(); a chunk of router lines holds a handful of kinds). A parsed line cost ~230 bytes, ~100 of them
text; sealed, ~20 to 30. A dashboard keeps 10,000 lines for each machine and as many again in its log panel, and
the fill of those was most of what a 20-minute soak grew.

Reading a sealed line unpacks its whole chunk (~0.1 ms) into LogLines equal to the ones that went in; the last few
chunks read are kept unpacked (DECODED_CHUNKS), so the rows on a screen and a page each side cost one unpacking.
"""

from __future__ import annotations

import zlib
from array import array
from collections import OrderedDict, deque
from collections.abc import Iterable, Iterator, Sequence
from itertools import repeat
from typing import overload

from app.services.core.log_lines import SKIPPED_SOURCE, LogLine, LogLineParts

CHUNK = 256  # lines a chunk holds: ≤ 256, so a line's kind fits in a byte
# Bound: the chunks kept unpacked for reading, 4 × 256 LogLines (~240 KB): a screen of rows and a page each side.
DECODED_CHUNKS = 4
_MODEL = 5  # the model's place in LogLine.parts()
_ZLIB_LEVEL = 6  # 256 router lines: ~0.3 ms to pack at 6 against ~0.15 ms at 1, a third smaller


class _Packed:
    """CHUNK sealed lines: their joined raw texts compressed, where each ends, and each one's kind."""

    __slots__ = ("blob", "ends", "has_marker", "kinds", "skipped", "which", "widest")

    def __init__(self, lines: Sequence[LogLine]) -> None:
        kinds: dict[LogLineParts, int] = {}
        which = bytearray()
        ends = array("I")
        end = -1
        for ln in lines:
            which.append(kinds.setdefault(ln.parts(), len(kinds)))
            end += 1 + len(ln.raw)
            ends.append(end)
        # Joined with newlines: lowered whole, the text then holds each line's lowered text (nothing of one line is
        # cased by the next, as a final sigma would be), so a search can pass over a chunk without unpacking it.
        # surrogatepass: any str goes in and comes out as it was (a log decoded with surrogateescape, say).
        text = "\n".join(ln.raw for ln in lines)
        self.blob = zlib.compress(text.encode("utf-8", "surrogatepass"), _ZLIB_LEVEL)
        self.ends = ends
        self.kinds = tuple(kinds)
        self.which = bytes(which)
        # A marker (no raw text, or the follower's "skipped" line) is shown whatever the filter: never passed over.
        self.has_marker = any(not ln.raw or ln.source == SKIPPED_SOURCE for ln in lines)
        # What a reader of the whole scrollback asks of every line, kept so a new reader need not unpack it all.
        self.widest, self.skipped = summary(lines)

    def text(self) -> str:
        return zlib.decompress(self.blob).decode("utf-8", "surrogatepass")

    def unpack(self, text: str | None = None) -> list[LogLine]:
        text = self.text() if text is None else text  # the text, when the caller has decompressed it already
        kinds, make = self.kinds, LogLine.from_parts
        out: list[LogLine] = []
        start = 0
        for end, k in zip(self.ends, self.which, strict=True):
            out.append(make(text[start:end], kinds[k]))
            start = end + 1
        return out

    def unpack_if_held(self, needle: str, model: str | None) -> list[LogLine] | None:
        """The lines, unless none here can be one with `needle` in its lowered raw text and of `model` (None: any):
        then None, and the chunk is not unpacked (its text is decompressed once either way)."""
        if self.has_marker:
            return self.unpack()
        if model is not None and all(k[_MODEL] != model for k in self.kinds):
            return None
        text = self.text()
        return self.unpack(text) if not needle or needle in text.lower() else None


def summary(lines: Iterable[LogLine]) -> tuple[int, int]:
    """(the longest text, how many lines the "skipped" markers among them stand for)."""
    widest = skipped = 0
    for ln in lines:
        widest = max(widest, len(ln.text))
        if ln.source == SKIPPED_SOURCE:
            skipped += ln.skipped
    return widest, skipped


class Scrollback(Sequence[LogLine]):
    """The last `maxlen` lines, oldest first. Bound: `maxlen` lines, plus up to CHUNK - 1 already dropped that
    share the oldest chunk with kept ones (a chunk leaves whole)."""

    def __init__(self, maxlen: int) -> None:
        self.maxlen = maxlen
        self._sealed: deque[_Packed] = deque()
        self._open: list[LogLine] = []
        self._head = 0  # lines of the oldest sealed chunk that were dropped
        self._gone = 0  # sealed chunks dropped so far: a chunk's number is _gone + its place in _sealed
        self._decoded: OrderedDict[int, list[LogLine]] = OrderedDict()

    # ---- filling ----

    def append(self, line: LogLine) -> None:
        self.extend((line,))

    def extend(self, lines: Iterable[LogLine]) -> None:
        """Add lines at the end. Another Scrollback's sealed chunks are taken as they are (they never change)."""
        if isinstance(lines, Scrollback) and lines is not self and not self:
            self._sealed.extend(lines._sealed)
            self._head = lines._head
            self._open = list(lines._open)
            self._trim()
            return
        for ln in list(lines):
            self._open.append(ln)
            if len(self._open) >= CHUNK:
                self._seal()
        self._trim()

    def clear(self) -> None:
        self._gone += len(self._sealed)
        self._sealed.clear()
        self._open = []
        self._head = 0
        self._decoded.clear()

    def _seal(self) -> None:
        self._sealed.append(_Packed(self._open))
        self._open = []

    def _trim(self) -> None:
        extra = len(self) - self.maxlen
        while extra > 0 and self._sealed:
            left_in_oldest = CHUNK - self._head
            if extra < left_in_oldest:
                self._head += extra
                return
            extra -= left_in_oldest
            self._sealed.popleft()
            self._decoded.pop(self._gone, None)
            self._gone += 1
            self._head = 0
        if extra > 0:
            del self._open[:extra]

    # ---- reading ----

    def __len__(self) -> int:
        return len(self._sealed) * CHUNK - self._head + len(self._open)

    @overload
    def __getitem__(self, i: int) -> LogLine: ...

    @overload
    def __getitem__(self, i: slice) -> list[LogLine]: ...

    def __getitem__(self, i: int | slice) -> LogLine | list[LogLine]:
        n = len(self)
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(n))]
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("scrollback index out of range")
        at = i + self._head
        chunk, within = divmod(at, CHUNK)
        if chunk < len(self._sealed):
            return self._unpacked(chunk)[within]
        return self._open[at - len(self._sealed) * CHUNK]

    def __iter__(self) -> Iterator[LogLine]:
        # A scan (a filter's, a new source's) unpacks each chunk once and keeps none: the rows on screen keep theirs.
        head = self._head
        for chunk in list(self._sealed):
            lines = chunk.unpack()
            yield from lines[head:] if head else lines
            head = 0
        yield from list(self._open)

    def candidates(self, needle: str = "", model: str | None = None) -> Iterator[tuple[int, LogLine]]:
        """(index, line) for every line that may hold `needle` (lowered) in its lowered raw text and be of `model`
        (None: any), markers included; the caller judges each. Chunks that hold none are not unpacked: a search of
        100,000 lines unpacked them all, ~1.5 us a line."""
        head, at = self._head, 0
        for chunk in list(self._sealed):
            lines = chunk.unpack_if_held(needle, model)
            if lines is not None:
                for k in range(head, CHUNK):
                    yield at + k - head, lines[k]
            at += CHUNK - head
            head = 0
        for k, ln in enumerate(list(self._open)):
            yield at + k, ln

    def unless_within(self, width: int) -> Iterator[LogLine | None]:
        """Each line held, oldest first, or None for one of a packed chunk whose texts are all at most `width` long:
        that chunk is not unpacked. What wrapping at a width must look at (the panel's `W` over 100,000 lines
        unpacked them all, ~430 ms)."""
        head = self._head
        for chunk in list(self._sealed):
            if chunk.widest <= width:
                yield from repeat(None, CHUNK - head)
            else:
                lines = chunk.unpack()
                yield from lines[head:] if head else lines
            head = 0
        yield from list(self._open)

    def summary(self) -> tuple[int, int]:
        """summary() of the lines held, with no chunk unpacked but the oldest when some of it was dropped: a machine
        switch read ~10,000 lines back out of their chunks to learn this, ~15 ms."""
        parts = [summary(self._open)]
        for k, chunk in enumerate(self._sealed):
            parts.append(
                summary(chunk.unpack()[self._head :]) if k == 0 and self._head else (chunk.widest, chunk.skipped)
            )
        return max(w for w, _ in parts), sum(n for _, n in parts)

    def __reversed__(self) -> Iterator[LogLine]:
        yield from reversed(list(self._open))
        for k in range(len(self._sealed) - 1, -1, -1):
            lines = self._sealed[k].unpack()
            yield from reversed(lines[self._head :] if k == 0 else lines)

    def _unpacked(self, chunk: int) -> list[LogLine]:
        number = self._gone + chunk
        lines = self._decoded.get(number)
        if lines is None:
            lines = self._decoded[number] = self._sealed[chunk].unpack()
            if len(self._decoded) > DECODED_CHUNKS:
                self._decoded.popitem(last=False)
        else:
            self._decoded.move_to_end(number)
        return lines

    def packed_bytes(self) -> int:
        """What the sealed chunks hold, compressed text and index together (for benches and tests)."""
        return sum(len(c.blob) + len(c.which) + c.ends.itemsize * len(c.ends) for c in self._sealed)
