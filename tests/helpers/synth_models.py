"""Synthetic GGUF models big enough for memory figures to matter (tens of MB), for the fit-estimate tests.

Three architectures llama-server accepts: `llama` (here with grouped-query attention: fewer KV heads than query
heads), `qwen2` (the llama layout plus q/k/v biases) and `gemma2` (every other layer a sliding window; extra
norms, output tied to the embedding). Weights are seeded random F32 or F16; the vocabulary is
the tiny models' recipe, so only the layers weigh.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gguf import GGUFWriter

from app.tinymodels import Shape, add_header, add_tensors, add_vocab, write_gguf


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
    shape = Shape(
        spec.name,
        spec.context_length,
        spec.n_embd,
        spec.n_layers,
        spec.n_heads,
        spec.n_heads_kv,
        spec.n_ff,
        file_type=1 if spec.f16 else 0,
    )

    def fill(w: GGUFWriter) -> None:
        add_header(w, shape)
        if spec.arch == "gemma2":
            w.add_sliding_window(spec.sliding_window or 256)
            w.add_attn_logit_softcapping(50.0)
            w.add_final_logit_softcapping(30.0)
        n_vocab = add_vocab(w)
        add_tensors(w, shape, n_vocab, spec.seed, spec.arch)

    return write_gguf(path, spec.arch, fill)
