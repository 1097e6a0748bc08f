"""How much memory a model will take once llama-server loads it: weights + KV cache + compute buffers (+ projector).

Pure: the caller reads the header (gguf_header) and the file sizes; nothing here does I/O. Every part carries
the bytes and where the figure came from, so the operator can judge it. The rules follow llama.cpp's own:
- weights: the shard files' sizes (the tensor data is the file bar a header of a few MB at most);
  `n-gpu-layers` splits them between GPU and host by the share of repeating layers (+ the output layer);
- KV cache: cells × layers × (K width × K type size + V width × V type size). Cells are the context padded to
  256; with `kv_unified` off each of `parallel` sequences gets ctx/parallel cells, padded. Sliding-window layers
  hold only window × sequences + ubatch cells (padded), as the server does without `--swa-full`;
- compute: fitted on llama-server's `compute buffer size` for synthetic models (CPU, flash attention on, which
  is what `auto` gives on CPU): per ubatch token, the larger of the FFN's intermediates and the logits, plus the
  f16 attention mask (ctx × ubatch × 2 bytes).
"""

from __future__ import annotations

from dataclasses import dataclass

from app.services.files.gguf_header import GgufHeader, GgufValue, SkippedArray

KV_PAD = 256  # llama.cpp pads the KV cache's cells to this
DEFAULT_UBATCH = 512
DEFAULT_PARALLEL = 4  # llama-server's `auto`: 4 slots, unified KV

# bytes per element of the cache types llama-server accepts for --cache-type-k/-v (block size / block bytes)
CACHE_TYPE_BYTES: dict[str, float] = {
    "f32": 4.0,
    "f16": 2.0,
    "bf16": 2.0,
    "q8_0": 34 / 32,
    "q4_0": 18 / 32,
    "q4_1": 20 / 32,
    "iq4_nl": 18 / 32,
    "q5_0": 22 / 32,
    "q5_1": 24 / 32,
}

# architectures whose sliding-window layers follow a fixed pattern: every Nth layer is full attention
_SWA_PATTERN_DEFAULT = {"gemma2": 2, "gemma3": 6, "gemma3n": 5, "cohere2": 4}

# compute fit (floats per ubatch token); see the module docstring and tests/integration/test_fit_server.py
_FFN_PER_FF = 3.0
_FFN_PER_EMBD = 5.0
_LOGITS_PER_EMBD = 2.0


class FitInputError(ValueError):
    """The header lacks what the estimate needs, or a setting is not understood."""


@dataclass(frozen=True)
class FitSettings:
    """The preset's settings that change memory use (llama-server's defaults when not given)."""

    ctx_size: int = 0  # 0: the model's own context length
    cache_type_k: str = "f16"
    cache_type_v: str = "f16"
    parallel: int = DEFAULT_PARALLEL
    kv_unified: bool = True
    n_gpu_layers: int = 0
    n_ubatch: int = DEFAULT_UBATCH


@dataclass(frozen=True)
class Part:
    bytes: int
    source: str  # where the figure came from, in words


@dataclass(frozen=True)
class FitEstimate:
    weights: Part
    kv: Part
    compute: Part
    projector: Part
    n_ctx: int  # the context the estimate is for (after the model default and padding)
    gpu_bytes: int  # of the total, what n-gpu-layers puts on the GPU(s)

    @property
    def total(self) -> int:
        return self.weights.bytes + self.kv.bytes + self.compute.bytes + self.projector.bytes

    @property
    def host_bytes(self) -> int:
        return self.total - self.gpu_bytes

    def as_dict(self) -> dict[str, int]:
        return {
            "weights": self.weights.bytes,
            "kv": self.kv.bytes,
            "compute": self.compute.bytes,
            "projector": self.projector.bytes,
            "total": self.total,
        }


def _pad(n: int, to: int = KV_PAD) -> int:
    return -(-n // to) * to


def _int(value: GgufValue | None) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _per_layer(value: GgufValue | None, n_layers: int) -> list[int] | None:
    """A scalar or a per-layer array of ints, as a list of n_layers."""
    scalar = _int(value)
    if scalar is not None:
        return [scalar] * n_layers
    if isinstance(value, tuple) and len(value) == n_layers and all(_int(v) is not None for v in value):
        return [int(v) for v in value]  # type: ignore[arg-type]
    return None


def _cache_bytes(name: str) -> float:
    try:
        return CACHE_TYPE_BYTES[name.lower()]
    except KeyError:
        known = ", ".join(CACHE_TYPE_BYTES)
        raise FitInputError(f"unknown cache type {name!r} (known: {known})") from None


def _swa_layers(header: GgufHeader, n_layers: int) -> tuple[list[bool], int, str]:
    """Which layers use a sliding window, the window, and how that was known."""
    kv, arch = header.kv, header.arch
    window = _int(kv.get(f"{arch}.attention.sliding_window"))
    if not window:
        return [False] * n_layers, 0, "no sliding window in the header"
    pattern_v = kv.get(f"{arch}.attention.sliding_window_pattern")
    if isinstance(pattern_v, tuple) and len(pattern_v) == n_layers:
        return [bool(v) for v in pattern_v], window, "per-layer sliding-window pattern from the header"
    every = _int(pattern_v) or _SWA_PATTERN_DEFAULT.get(arch or "")
    if not every:
        return [True] * n_layers, window, "sliding window on every layer (no pattern in the header)"
    return [(il % every) < every - 1 for il in range(n_layers)], window, f"full attention on 1 layer in {every}"


def _kv_part(header: GgufHeader, s: FitSettings, n_ctx: int) -> Part:
    kv, arch = header.kv, header.arch
    n_layers = header.block_count
    if not n_layers:
        raise FitInputError("the header has no block_count")
    n_embd = _int(kv.get(f"{arch}.embedding_length"))
    heads = _per_layer(kv.get(f"{arch}.attention.head_count"), n_layers)
    heads_kv = _per_layer(kv.get(f"{arch}.attention.head_count_kv"), n_layers) or heads
    if heads_kv is None:
        raise FitInputError("the header has no attention.head_count(_kv)")
    k_len = _int(kv.get(f"{arch}.attention.key_length"))
    v_len = _int(kv.get(f"{arch}.attention.value_length"))
    width_from = "key/value_length"
    if k_len is None or v_len is None:
        if not n_embd or not heads or not max(heads):
            raise FitInputError("the header has neither key/value lengths nor embedding_length/head_count")
        k_len = v_len = n_embd // max(heads)
        width_from = "embedding_length/head_count"
    kb, vb = _cache_bytes(s.cache_type_k), _cache_bytes(s.cache_type_v)
    swa, window, swa_from = _swa_layers(header, n_layers)
    seqs = max(1, s.parallel)
    # unified: one stream for all sequences; otherwise one stream per sequence, each padded
    cells = _pad(n_ctx) if s.kv_unified else seqs * _pad(max(1, n_ctx // seqs))
    swa_cells = min(cells, _pad(window * (seqs if s.kv_unified else 1) + s.n_ubatch)) if window else cells
    total = 0.0
    for il in range(n_layers):
        c = swa_cells if swa[il] else cells
        total += c * heads_kv[il] * (k_len * kb + v_len * vb)
    return Part(
        int(total),
        f"{cells} cells × {n_layers} layers × head_count_kv × ({width_from}) × "
        f"K {s.cache_type_k} / V {s.cache_type_v}; {swa_from}",
    )


def _compute_part(header: GgufHeader, s: FitSettings, n_ctx: int) -> Part:
    kv, arch = header.kv, header.arch
    n_embd = _int(kv.get(f"{arch}.embedding_length")) or 0
    n_ff_v = _per_layer(kv.get(f"{arch}.feed_forward_length"), header.block_count or 0)
    n_ff = max(n_ff_v) if n_ff_v else 4 * n_embd
    vocab_v = kv.get("tokenizer.ggml.tokens")
    n_vocab = 0
    if isinstance(vocab_v, SkippedArray):
        n_vocab = vocab_v.count
    elif isinstance(vocab_v, tuple):
        n_vocab = len(vocab_v)
    n_vocab = n_vocab or _int(kv.get(f"{arch}.vocab_size")) or 0
    ubatch = min(s.n_ubatch, _pad(n_ctx))
    per_token = max(_FFN_PER_FF * n_ff + _FFN_PER_EMBD * n_embd, n_vocab + _LOGITS_PER_EMBD * n_embd)
    total = int(4 * ubatch * per_token + 2 * ubatch * _pad(n_ctx))
    return Part(total, f"fitted on llama-server's compute buffer: ubatch {ubatch} × max(FFN, logits) + f16 mask")


def estimate(
    header: GgufHeader,
    shard_bytes: list[int],
    settings: FitSettings | None = None,
    projector_bytes: int = 0,
) -> FitEstimate:
    """The estimate for one model file (its shards' sizes) under the preset's settings."""
    s = settings or FitSettings()
    if not shard_bytes:
        raise FitInputError("no model file sizes")
    n_ctx = s.ctx_size
    ctx_from = "ctx-size"
    if n_ctx <= 0:
        n_ctx = header.context_length or 0
        ctx_from = "the model's own context length"
        if n_ctx <= 0:
            raise FitInputError("ctx-size is 0 and the header has no context_length")
    weights = Part(sum(shard_bytes), f"sum of {len(shard_bytes)} shard file(s)")
    kv = _kv_part(header, s, n_ctx)
    compute = _compute_part(header, s, n_ctx)
    projector = Part(projector_bytes, "mmproj file size" if projector_bytes else "no projector")
    n_layers = header.block_count or 1
    on_gpu = min(max(s.n_gpu_layers, 0), n_layers + 1)
    share = on_gpu / (n_layers + 1)
    gpu = int(weights.bytes * share + kv.bytes * min(on_gpu, n_layers) / n_layers)
    if on_gpu:
        gpu += compute.bytes + projector.bytes  # the backend's compute buffer and the projector go to the GPU
    return FitEstimate(
        weights=weights,
        kv=Part(kv.bytes, kv.source + f"; context {n_ctx} from {ctx_from}"),
        compute=compute,
        projector=projector,
        n_ctx=_pad(n_ctx),
        gpu_bytes=gpu,
    )
