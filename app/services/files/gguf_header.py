"""Read a GGUF file's metadata (its key/value header) from the first bytes of the file.

The file may sit on another machine, so the caller fetches a prefix (a few MB is usually plenty) and this parses
what the prefix holds. When it is too short, the result says so (`truncated`) and how many bytes are needed at
least to go further (`bytes_needed`, a lower bound: fetching twice what was read, or more, is usually quicker
than stepping through a vocabulary), and still carries every key read so far: the keys llamaherd needs
(`general.*`, `<arch>.*`) come before the tokenizer's large arrays in files written by llama.cpp's tools.

Format (GGUF v2 and v3): magic `GGUF`, u32 version, u64 tensor count, u64 key/value count, then per pair a
string key, a u32 value type and the value. Strings are a u64 length and UTF-8 bytes. Arrays are a u32 element
type, a u64 count and the elements. Little-endian, or big-endian for files made for big-endian machines (the
version then reads byte-swapped).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import TypeAlias

MAGIC = b"GGUF"
ARRAY_KEEP_MAX = 64
"""Arrays longer than this are skipped (walked, not built): the tokenizer's vocabulary has 100k+ strings."""


class GgufFormatError(ValueError):
    """The bytes are not a GGUF header this reader understands."""


@dataclass(frozen=True)
class SkippedArray:
    """An array too long to keep: its element type name and length."""

    element_type: str
    count: int


GgufValue: TypeAlias = int | float | bool | str | tuple["GgufValue", ...] | SkippedArray


@dataclass(frozen=True)
class GgufHeader:
    """What llamaherd reads of a model file. The named fields are taken from `kv` (`<arch>.<name>` keys for
    the architecture's own); `kv` holds every pair read, long arrays as `SkippedArray`."""

    arch: str | None = None
    name: str | None = None
    context_length: int | None = None
    block_count: int | None = None
    # multi-token-prediction layers: 0 when the whole header was read and names none; None when the prefix
    # ended before that could be known
    nextn_predict_layers: int | None = None
    file_type: int | None = None
    kv: dict[str, GgufValue] = field(default_factory=dict)
    version: int = 3
    tensor_count: int = 0
    kv_count: int = 0
    truncated: bool = False  # the prefix ended before every key/value pair was read
    bytes_needed: int | None = None  # when truncated: read at least this many bytes to get further


def _as_str(value: GgufValue | None) -> str | None:
    return value if isinstance(value, str) else None


def _as_int(value: GgufValue | None) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _summarise(
    kv: dict[str, GgufValue], version: int, tensor_count: int, kv_count: int, needed: int | None
) -> GgufHeader:
    arch = _as_str(kv.get("general.architecture"))

    def arch_int(suffix: str) -> int | None:
        return _as_int(kv.get(f"{arch}.{suffix}")) if arch else None

    nextn = arch_int("nextn_predict_layers")
    if nextn is None and needed is None:
        nextn = 0  # every pair was read: the file has none
    return GgufHeader(
        arch=arch,
        name=_as_str(kv.get("general.name")),
        context_length=arch_int("context_length"),
        block_count=arch_int("block_count"),
        nextn_predict_layers=nextn,
        file_type=_as_int(kv.get("general.file_type")),
        kv=kv,
        version=version,
        tensor_count=tensor_count,
        kv_count=kv_count,
        truncated=needed is not None,
        bytes_needed=needed,
    )


# ---- parsing ----

# value type id → (name, struct code); strings (8) and arrays (9) are handled apart
_SCALARS: dict[int, tuple[str, str]] = {
    0: ("u8", "B"),
    1: ("i8", "b"),
    2: ("u16", "H"),
    3: ("i16", "h"),
    4: ("u32", "I"),
    5: ("i32", "i"),
    6: ("f32", "f"),
    7: ("bool", "?"),
    10: ("u64", "Q"),
    11: ("i64", "q"),
    12: ("f64", "d"),
}
_STRING, _ARRAY = 8, 9


class _Short(Exception):
    """The prefix ended; `needed` is the smallest total length that would let parsing go on."""

    def __init__(self, needed: int) -> None:
        self.needed = needed


class _Reader:
    def __init__(self, data: bytes, endian: str) -> None:
        self.data = data
        self.pos = 0
        self.endian = endian

    def take(self, code: str) -> int | float | bool:
        fmt = self.endian + code
        size = struct.calcsize(fmt)
        self.need(size)
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return value  # type: ignore[no-any-return]

    def take_int(self, code: str) -> int:
        return int(self.take(code))

    def need(self, size: int) -> None:
        if self.pos + size > len(self.data):
            raise _Short(self.pos + size)

    def string(self) -> str:
        length = self.take_int("Q")
        self.need(length)
        raw = self.data[self.pos : self.pos + length]
        self.pos += length
        return raw.decode("utf-8", errors="replace")

    def skip_string(self) -> None:
        length = self.take_int("Q")
        self.need(length)
        self.pos += length

    def value(self, type_id: int) -> GgufValue:
        if type_id in _SCALARS:
            return self.take(_SCALARS[type_id][1])
        if type_id == _STRING:
            return self.string()
        if type_id == _ARRAY:
            return self.array()
        raise GgufFormatError(f"unknown GGUF value type {type_id} at byte {self.pos}")

    def array(self) -> GgufValue:
        element = self.take_int("I")
        count = self.take_int("Q")
        if count <= ARRAY_KEEP_MAX:
            return tuple(self.value(element) for _ in range(count))
        self.skip_elements(element, count)
        return SkippedArray(_type_name(element), count)

    def skip_elements(self, element: int, count: int) -> None:
        if element in _SCALARS:
            size = struct.calcsize(self.endian + _SCALARS[element][1]) * count
            self.need(size)  # the exact end is known: ask for all of it at once
            self.pos += size
        elif element == _STRING:
            for done in range(count):
                start = self.pos
                try:
                    self.skip_string()
                except _Short as short:
                    # each string left takes 8 bytes at least: a far better hint than "the next string"
                    raise _Short(max(short.needed, start + 8 * (count - done))) from None
        elif element == _ARRAY:
            for _ in range(count):
                inner, n = self.take_int("I"), self.take_int("Q")
                self.skip_elements(inner, n)
        else:
            raise GgufFormatError(f"unknown GGUF array element type {element} at byte {self.pos}")


def _type_name(type_id: int) -> str:
    if type_id in _SCALARS:
        return _SCALARS[type_id][0]
    return {_STRING: "string", _ARRAY: "array"}.get(type_id, str(type_id))


def _endianness(data: bytes) -> str:
    (version,) = struct.unpack_from("<I", data, 4)
    # a real version is a small number; byte-swapped it is huge (1 << 24 and up)
    return ">" if version >= 1 << 16 else "<"


def parse_gguf_header(data: bytes) -> GgufHeader:
    """Parse as much of the header as `data` (a prefix of the file) holds.

    Raises GgufFormatError when the bytes are not GGUF (wrong magic, GGUF v1, unknown value type), and when even
    the fixed 24-byte preamble is missing.
    """
    if len(data) < 4 or data[:4] != MAGIC:
        if len(data) < 4 and MAGIC.startswith(data):
            raise GgufFormatError(f"only {len(data)} bytes: a GGUF header needs at least 24")
        raise GgufFormatError("not a GGUF file (no 'GGUF' magic)")
    if len(data) < 24:
        raise GgufFormatError(f"only {len(data)} bytes: a GGUF header needs at least 24")
    reader = _Reader(data, _endianness(data))
    reader.pos = 4
    version = reader.take_int("I")
    if version < 2:
        raise GgufFormatError(f"GGUF version {version} is not supported (only 2 and later)")
    tensor_count = reader.take_int("Q")
    kv_count = reader.take_int("Q")
    kv: dict[str, GgufValue] = {}
    try:
        for _ in range(kv_count):
            key = reader.string()
            type_id = reader.take_int("I")
            kv[key] = reader.value(type_id)
    except _Short as short:
        return _summarise(kv, version, tensor_count, kv_count, short.needed)
    return _summarise(kv, version, tensor_count, kv_count, None)
