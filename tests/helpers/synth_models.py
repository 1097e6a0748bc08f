"""Synthetic GGUF models big enough for memory figures to matter (tens of MB), for the fit-estimate tests.

Three architectures llama-server accepts: `llama` (here with grouped-query attention: fewer KV heads than query
heads), `qwen2` (the llama layout plus q/k/v biases) and `gemma2` (every other layer a sliding window; extra
norms, output tied to the embedding). Weights are seeded random F32 or F16; the vocabulary is
the tiny models' recipe, so only the layers weigh.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from app.tinymodels import _vocab


@dataclass(frozen=True)
class SynthSpec:
    name: str
    arch: str = "llama"  # "llama", "qwen2" or "gemma2"
    n_embd: int = 384
    n_layers: int = 6
    n_heads: int = 6
    n_heads_kv: int = 6
    n_ff: int = 1024
    context_length: int = 4096
    sliding_window: int = 0  # gemma2 only
    f16: bool = False
    seed: int = 0


def write_synth_model(path: Path, spec: SynthSpec) -> Path:
    """Write the model atomically and return its path."""
    import numpy as np
    from gguf import GGUFWriter

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    rng = np.random.default_rng(spec.seed)
    tokens, scores, types = _vocab()
    e, ff = spec.n_embd, spec.n_ff
    head_dim = e // spec.n_heads
    kv_dim = head_dim * spec.n_heads_kv
    dtype = np.float16 if spec.f16 else np.float32

    w = GGUFWriter(str(tmp), spec.arch)
    w.add_name(spec.name)
    w.add_context_length(spec.context_length)
    w.add_embedding_length(e)
    w.add_block_count(spec.n_layers)
    w.add_feed_forward_length(ff)
    w.add_head_count(spec.n_heads)
    w.add_head_count_kv(spec.n_heads_kv)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(head_dim)
    w.add_file_type(1 if spec.f16 else 0)
    if spec.arch == "gemma2":
        w.add_sliding_window(spec.sliding_window or 256)
        w.add_attn_logit_softcapping(50.0)
        w.add_final_logit_softcapping(30.0)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)

    def t(name: str, *shape: int) -> None:
        # 2-D weights take the model's type; norms and biases stay F32, as llama.cpp's converters write them
        arr = rng.standard_normal(shape) * 0.02
        w.add_tensor(name, arr.astype(dtype if len(shape) == 2 else np.float32))

    def ones(name: str, n: int) -> None:
        w.add_tensor(name, np.ones(n, dtype=np.float32))

    t("token_embd.weight", len(tokens), e)
    ones("output_norm.weight", e)
    if spec.arch != "gemma2":  # gemma2 reuses the embedding as its output layer
        t("output.weight", len(tokens), e)
    for i in range(spec.n_layers):
        ones(f"blk.{i}.attn_norm.weight", e)
        t(f"blk.{i}.attn_q.weight", e, e)
        t(f"blk.{i}.attn_k.weight", kv_dim, e)
        t(f"blk.{i}.attn_v.weight", kv_dim, e)
        if spec.arch == "qwen2":
            t(f"blk.{i}.attn_q.bias", e)
            t(f"blk.{i}.attn_k.bias", kv_dim)
            t(f"blk.{i}.attn_v.bias", kv_dim)
        t(f"blk.{i}.attn_output.weight", e, e)
        if spec.arch == "gemma2":
            ones(f"blk.{i}.post_attention_norm.weight", e)
            ones(f"blk.{i}.post_ffw_norm.weight", e)
        ones(f"blk.{i}.ffn_norm.weight", e)
        t(f"blk.{i}.ffn_gate.weight", ff, e)
        t(f"blk.{i}.ffn_up.weight", ff, e)
        t(f"blk.{i}.ffn_down.weight", e, ff)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(tmp, path)
    return path
