"""GGUF header parsing from a prefix of the file, checked against files written by the `gguf` package."""

from __future__ import annotations

import struct
from pathlib import Path

import gguf
import numpy as np
import pytest

from app.services.files.gguf_header import GgufFormatError, SkippedArray, parse_gguf_header


def write_gguf(
    path: Path,
    *,
    nextn: int | None = None,
    vocab: int = 8,
    endian: gguf.GGUFEndian = gguf.GGUFEndian.LITTLE,
) -> bytes:
    writer = gguf.GGUFWriter(str(path), "llama", endianess=endian)
    writer.add_name("tiny test model")
    writer.add_context_length(4096)
    writer.add_block_count(2)
    writer.add_file_type(1)
    if nextn is not None:
        writer.add_nextn_predict_layers(nextn)
    writer.add_float32("llama.rope.freq_base", 10000.0)
    writer.add_bool("tiny.flag", True)
    writer.add_array("tiny.small", [1, 2, 3])
    writer.add_token_list([f"token-{i}" for i in range(vocab)])
    writer.add_array("tiny.scores", [0.5] * vocab)  # a long fixed-size array after the vocabulary
    writer.add_string("tiny.after", "the last key")
    writer.add_tensor("w", np.zeros((4, 4), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path.read_bytes()


def test_reads_the_fields_llamaherd_needs(tmp_path: Path) -> None:
    data = write_gguf(tmp_path / "mtp.gguf", nextn=1)
    header = parse_gguf_header(data)
    assert not header.truncated and header.bytes_needed is None
    assert header.arch == "llama"
    assert header.name == "tiny test model"
    assert header.context_length == 4096
    assert header.block_count == 2
    assert header.file_type == 1
    assert header.nextn_predict_layers == 1
    assert header.version == 3 and header.tensor_count == 1
    assert header.kv_count == len(header.kv)
    assert header.kv["tiny.flag"] is True
    assert header.kv["tiny.small"] == (1, 2, 3)
    assert header.kv["llama.rope.freq_base"] == pytest.approx(10000.0)
    assert header.kv["tiny.after"] == "the last key"


def test_no_mtp_layers_in_a_complete_header_is_zero(tmp_path: Path) -> None:
    header = parse_gguf_header(write_gguf(tmp_path / "plain.gguf"))
    assert "llama.nextn_predict_layers" not in header.kv
    assert header.nextn_predict_layers == 0


def test_long_arrays_are_skipped_not_built(tmp_path: Path) -> None:
    header = parse_gguf_header(write_gguf(tmp_path / "vocab.gguf", vocab=50_000))
    assert header.kv["tokenizer.ggml.tokens"] == SkippedArray("string", 50_000)
    assert header.kv["tiny.scores"] == SkippedArray("f32", 50_000)
    assert header.kv["tiny.after"] == "the last key"


def test_a_short_prefix_gives_what_it_holds_and_how_much_more_is_needed(tmp_path: Path) -> None:
    data = write_gguf(tmp_path / "vocab.gguf", nextn=2, vocab=20_000)
    prefix = data[:4096]  # the arch keys fit, the vocabulary does not
    header = parse_gguf_header(prefix)
    assert header.truncated
    assert header.arch == "llama" and header.nextn_predict_layers == 2 and header.context_length == 4096
    assert "tiny.after" not in header.kv
    assert header.bytes_needed is not None and header.bytes_needed > len(prefix)
    # fetching what it asks for, again and again, gets to the end
    size = len(prefix)
    for _ in range(100):
        if not header.truncated:
            break
        assert header.bytes_needed is not None and header.bytes_needed > size
        size = header.bytes_needed
        header = parse_gguf_header(data[:size])
    assert not header.truncated
    assert header.kv["tiny.after"] == "the last key"


def test_a_fixed_size_array_asks_for_all_of_itself_at_once(tmp_path: Path) -> None:
    data = write_gguf(tmp_path / "scores.gguf", vocab=100)
    # cut inside tiny.scores, after its type (4 bytes), element type (4) and count (8)
    start = data.index(b"tiny.scores") + len(b"tiny.scores") + 4 + 4 + 8
    header = parse_gguf_header(data[: start + 3])
    assert header.truncated and header.bytes_needed == start + 100 * 4


def test_unknown_mtp_when_the_prefix_ends_before_the_key(tmp_path: Path) -> None:
    data = write_gguf(tmp_path / "plain.gguf")
    header = parse_gguf_header(data[:40])
    assert header.truncated and header.nextn_predict_layers is None and header.kv == {}


def test_big_endian_files(tmp_path: Path) -> None:
    header = parse_gguf_header(write_gguf(tmp_path / "be.gguf", nextn=1, endian=gguf.GGUFEndian.BIG))
    assert header.arch == "llama" and header.nextn_predict_layers == 1 and header.context_length == 4096


def test_not_gguf_is_refused(tmp_path: Path) -> None:
    with pytest.raises(GgufFormatError, match="magic"):
        parse_gguf_header(b"PK\x03\x04" + bytes(100))
    with pytest.raises(GgufFormatError, match="at least 24"):
        parse_gguf_header(b"GGUF\x03\x00")
    with pytest.raises(GgufFormatError, match="at least 24"):
        parse_gguf_header(b"GG")
    with pytest.raises(GgufFormatError, match="version 1"):
        parse_gguf_header(b"GGUF" + struct.pack("<IQQ", 1, 0, 0))
    bad_type = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 1) + b"k" + struct.pack("<I", 99)
    with pytest.raises(GgufFormatError, match="unknown GGUF value type 99"):
        parse_gguf_header(bad_type)
