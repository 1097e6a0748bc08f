"""The fit estimate's rules on hand-made headers (the real server's figures are checked in test_fit_server)."""

from __future__ import annotations

import pytest

from app.services.files.gguf_header import GgufHeader, GgufValue, SkippedArray
from app.services.fit.estimate import FitInputError, FitSettings, estimate

MIB = 1 << 20


def header(arch: str = "llama", **arch_kv: GgufValue) -> GgufHeader:
    kv: dict[str, GgufValue] = {
        "general.architecture": arch,
        f"{arch}.embedding_length": 512,
        f"{arch}.attention.head_count": 8,
        f"{arch}.attention.head_count_kv": 2,
        f"{arch}.feed_forward_length": 1408,
        "tokenizer.ggml.tokens": SkippedArray("string", 32000),
    }
    kv.update({f"{arch}.{k.replace('__', '.')}": v for k, v in arch_kv.items()})
    return GgufHeader(arch=arch, context_length=4096, block_count=6, kv=kv)


def test_kv_for_gqa_f16_matches_llama_cpp_formula() -> None:
    e = estimate(header(), [100 * MIB], FitSettings(ctx_size=2048))
    # 2048 cells × 6 layers × 2 kv heads × 64 dims × (K 2 B + V 2 B)
    assert e.kv.bytes == 2048 * 6 * 2 * 64 * 4
    assert "embedding_length/head_count" in e.kv.source


def test_context_padded_and_model_default() -> None:
    padded = estimate(header(), [MIB], FitSettings(ctx_size=1000))
    assert padded.n_ctx == 1024
    own = estimate(header(), [MIB], FitSettings(ctx_size=0))
    assert own.n_ctx == 4096 and "model's own" in own.kv.source


def test_quantised_cache_types_scale_kv() -> None:
    f16 = estimate(header(), [MIB], FitSettings(ctx_size=4096)).kv.bytes
    q8 = estimate(header(), [MIB], FitSettings(ctx_size=4096, cache_type_k="q8_0", cache_type_v="q8_0")).kv.bytes
    q4 = estimate(header(), [MIB], FitSettings(ctx_size=4096, cache_type_k="q4_0", cache_type_v="q4_0")).kv.bytes
    assert q8 == f16 * 34 // 64 and q4 == f16 * 18 // 64
    mixed = estimate(header(), [MIB], FitSettings(ctx_size=4096, cache_type_k="q8_0")).kv.bytes
    assert mixed == (f16 + q8) // 2


def test_unknown_cache_type_is_a_clear_error() -> None:
    with pytest.raises(FitInputError, match="q3_z"):
        estimate(header(), [MIB], FitSettings(cache_type_k="q3_z"))


def test_per_layer_head_count_kv_and_explicit_key_lengths() -> None:
    h = header(attention__head_count_kv=(2, 2, 0, 0, 4, 4), attention__key_length=128, attention__value_length=96)
    e = estimate(h, [MIB], FitSettings(ctx_size=256))
    assert e.kv.bytes == 256 * (2 + 2 + 4 + 4) * (128 + 96) * 2
    assert "key/value_length" in e.kv.source


def test_sliding_window_layers_hold_only_the_window() -> None:
    h = header("gemma2", attention__sliding_window=1024)
    e = estimate(h, [MIB], FitSettings(ctx_size=32768, parallel=1))
    per_cell_layer = 2 * 64 * 4
    swa_cells = 1024 + 512 + 0  # window × 1 sequence + ubatch, already a multiple of 256
    # gemma2: every 2nd layer is full attention → 3 SWA layers, 3 full
    assert e.kv.bytes == per_cell_layer * (3 * swa_cells + 3 * 32768)
    assert "1 layer in 2" in e.kv.source


def test_non_unified_kv_splits_cells_per_sequence() -> None:
    e = estimate(header(), [MIB], FitSettings(ctx_size=1000, parallel=4, kv_unified=False))
    assert e.kv.bytes == 4 * 256 * 6 * 2 * 64 * 4  # 1000 / 4 = 250 → 256 cells per sequence


def test_weights_sum_shards_and_gpu_split() -> None:
    shards = [300 * MIB, 200 * MIB]
    cpu = estimate(header(), shards, FitSettings(ctx_size=512), projector_bytes=50 * MIB)
    assert cpu.weights.bytes == 500 * MIB and "2 shard" in cpu.weights.source
    assert cpu.projector.bytes == 50 * MIB and cpu.gpu_bytes == 0
    assert cpu.total == sum(v for k, v in cpu.as_dict().items() if k != "total")
    full = estimate(header(), shards, FitSettings(ctx_size=512, n_gpu_layers=99))
    assert full.gpu_bytes == full.total
    half = estimate(header(), shards, FitSettings(ctx_size=512, n_gpu_layers=3))
    assert 0 < half.gpu_bytes < full.gpu_bytes


def test_compute_grows_with_context_and_vocab() -> None:
    small = estimate(header(), [MIB], FitSettings(ctx_size=512)).compute.bytes
    large = estimate(header(), [MIB], FitSettings(ctx_size=8192)).compute.bytes
    assert large - small == 512 * 2 * (8192 - 512)  # the f16 mask: ubatch × ctx × 2 bytes
    h = header()
    h.kv["tokenizer.ggml.tokens"] = SkippedArray("string", 152064)
    assert estimate(h, [MIB], FitSettings(ctx_size=512)).compute.bytes > 4 * 512 * 152064


def test_missing_header_fields_are_clear_errors() -> None:
    with pytest.raises(FitInputError, match="block_count"):
        estimate(GgufHeader(arch="llama", context_length=10, kv={}), [MIB])
    with pytest.raises(FitInputError, match="context_length"):
        estimate(GgufHeader(arch="llama", block_count=2, kv={}), [MIB], FitSettings(ctx_size=0))
    with pytest.raises(FitInputError, match="file sizes"):
        estimate(header(), [])
