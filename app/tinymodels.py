"""Tiny GGUF models that llamaherd writes itself, for its tests and its demo fleet.

Nothing is downloaded: each file is a llama-architecture model of a few layers with random (seeded, so
reproducible) F32 weights. The vocabulary is the recipe that was found to work with llama-server: control tokens
`<unk> <s> </s>`, printable ASCII plus `▁` as normal tokens, and byte tokens only for 0x00..0x7F, so every token
decodes to ASCII and generated text is valid UTF-8 (a full 256-byte fallback produced invalid UTF-8 and a 500).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gguf import GGUFWriter

CHAT_TEMPLATE = (
    "{% for message in messages %}{{ '<s>' + message['role'] + '\\n' + message['content'] + '</s>\\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<s>assistant\\n' }}{% endif %}"
)


@dataclass(frozen=True)
class TinySpec:
    """What varies between tiny models: width, depth and context, so the demo shows different figures."""

    name: str
    n_embd: int = 64
    n_layers: int = 2
    n_heads: int = 4
    n_ff: int = 128
    context_length: int = 256
    chat_template: bool = True
    nextn_predict_layers: int = 0
    seed: int = 0


def _vocab() -> tuple[list[str], list[float], list[int]]:
    tokens = ["<unk>", "<s>", "</s>"]
    types = [2, 3, 3]  # unknown, control, control
    tokens.append("▁")
    types.append(1)
    for c in range(0x21, 0x7F):  # printable ASCII except space (space is ▁ in SPM vocabularies)
        tokens.append(chr(c))
        types.append(1)
    for b in range(0x80):
        tokens.append(f"<0x{b:02X}>")
        types.append(6)  # byte
    scores = [0.0] * len(tokens)
    return tokens, scores, types


@dataclass(frozen=True)
class Shape:
    """The hyperparameters a GGUF header states, shared by the tiny models and the tests' larger synthetic ones."""

    name: str
    context_length: int
    n_embd: int
    n_layers: int
    n_heads: int
    n_heads_kv: int
    n_ff: int
    file_type: int = 0  # 0: all F32, 1: 2-D weights F16


def add_header(w: GGUFWriter, shape: Shape) -> None:
    w.add_name(shape.name)
    w.add_context_length(shape.context_length)
    w.add_embedding_length(shape.n_embd)
    w.add_block_count(shape.n_layers)
    w.add_feed_forward_length(shape.n_ff)
    w.add_head_count(shape.n_heads)
    w.add_head_count_kv(shape.n_heads_kv)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(shape.n_embd // shape.n_heads)
    w.add_file_type(shape.file_type)


def add_vocab(w: GGUFWriter) -> int:
    """The tokenizer keys of the recipe above; returns the vocabulary size."""
    tokens, scores, types = _vocab()
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    return len(tokens)


def add_tensors(w: GGUFWriter, shape: Shape, n_vocab: int, seed: int, arch: str = "llama") -> None:
    """Seeded random weights in llama's layout; `qwen2` adds q/k/v biases, `gemma2` extra norms and a tied output."""
    import numpy as np

    rng = np.random.default_rng(seed)
    e, ff = shape.n_embd, shape.n_ff
    kv_dim = e // shape.n_heads * shape.n_heads_kv
    dtype = np.float16 if shape.file_type == 1 else np.float32

    def t(name: str, *dims: int) -> None:
        # 2-D weights take the model's type; norms and biases stay F32, as llama.cpp's converters write them
        arr = rng.standard_normal(dims) * 0.02
        w.add_tensor(name, arr.astype(dtype if len(dims) == 2 else np.float32))

    def ones(name: str, n: int) -> None:
        w.add_tensor(name, np.ones(n, dtype=np.float32))

    t("token_embd.weight", n_vocab, e)
    ones("output_norm.weight", e)
    if arch != "gemma2":  # gemma2 reuses the embedding as its output layer
        t("output.weight", n_vocab, e)
    for i in range(shape.n_layers):
        ones(f"blk.{i}.attn_norm.weight", e)
        t(f"blk.{i}.attn_q.weight", e, e)
        t(f"blk.{i}.attn_k.weight", kv_dim, e)
        t(f"blk.{i}.attn_v.weight", kv_dim, e)
        if arch == "qwen2":
            t(f"blk.{i}.attn_q.bias", e)
            t(f"blk.{i}.attn_k.bias", kv_dim)
            t(f"blk.{i}.attn_v.bias", kv_dim)
        t(f"blk.{i}.attn_output.weight", e, e)
        if arch == "gemma2":
            ones(f"blk.{i}.post_attention_norm.weight", e)
            ones(f"blk.{i}.post_ffw_norm.weight", e)
        ones(f"blk.{i}.ffn_norm.weight", e)
        t(f"blk.{i}.ffn_gate.weight", ff, e)
        t(f"blk.{i}.ffn_up.weight", ff, e)
        t(f"blk.{i}.ffn_down.weight", e, ff)


def write_gguf(path: Path, arch: str, fill: Callable[[GGUFWriter], None]) -> Path:
    """Write a GGUF file atomically: `fill` adds its keys and tensors."""
    from gguf import GGUFWriter

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    w = GGUFWriter(str(tmp), arch)
    fill(w)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(tmp, path)
    return path


def write_tiny_model(path: Path, spec: TinySpec) -> Path:
    """Write one tiny model to `path` (atomically) and return the path."""
    shape = Shape(spec.name, spec.context_length, spec.n_embd, spec.n_layers, spec.n_heads, spec.n_heads, spec.n_ff)

    def fill(w: GGUFWriter) -> None:
        add_header(w, shape)
        if spec.nextn_predict_layers:
            w.add_uint32("llama.nextn_predict_layers", spec.nextn_predict_layers)
        n_vocab = add_vocab(w)
        w.add_add_bos_token(True)
        if spec.chat_template:
            w.add_chat_template(CHAT_TEMPLATE)
        add_tensors(w, shape, n_vocab, spec.seed)

    return write_gguf(path, "llama", fill)


def write_corrupt_model(path: Path, spec: TinySpec | None = None) -> Path:
    """A model whose header is fine but whose tensor data is cut short: llama-server fails to load it."""
    good = write_tiny_model(path.with_name(path.name + ".whole"), spec or TinySpec(name="broken"))
    data = good.read_bytes()
    good.unlink()
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data[: len(data) // 2])
    os.replace(tmp, path)
    return path
