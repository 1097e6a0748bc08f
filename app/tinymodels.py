"""Tiny GGUF models that llamaherd writes itself, for its tests and its demo fleet.

Nothing is downloaded: each file is a llama-architecture model of a few layers with random (seeded, so
reproducible) F32 weights. The vocabulary is the recipe that was found to work with llama-server: control tokens
`<unk> <s> </s>`, printable ASCII plus `▁` as normal tokens, and byte tokens only for 0x00..0x7F, so every token
decodes to ASCII and generated text is valid UTF-8 (a full 256-byte fallback produced invalid UTF-8 and a 500).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

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


def write_tiny_model(path: Path, spec: TinySpec) -> Path:
    """Write one tiny model to `path` (atomically) and return the path."""
    import numpy as np
    from gguf import GGUFWriter

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    rng = np.random.default_rng(spec.seed)
    tokens, scores, types = _vocab()
    n_vocab = len(tokens)
    e, ff = spec.n_embd, spec.n_ff

    w = GGUFWriter(str(tmp), "llama")
    w.add_name(spec.name)
    w.add_context_length(spec.context_length)
    w.add_embedding_length(e)
    w.add_block_count(spec.n_layers)
    w.add_feed_forward_length(ff)
    w.add_head_count(spec.n_heads)
    w.add_head_count_kv(spec.n_heads)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(e // spec.n_heads)
    w.add_file_type(0)  # all F32
    if spec.nextn_predict_layers:
        w.add_uint32("llama.nextn_predict_layers", spec.nextn_predict_layers)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_add_bos_token(True)
    if spec.chat_template:
        w.add_chat_template(CHAT_TEMPLATE)

    def t(name: str, *shape: int) -> None:
        w.add_tensor(name, (rng.standard_normal(shape) * 0.02).astype(np.float32))

    t("token_embd.weight", n_vocab, e)
    w.add_tensor("output_norm.weight", np.ones(e, dtype=np.float32))
    t("output.weight", n_vocab, e)
    for i in range(spec.n_layers):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(e, dtype=np.float32))
        t(f"blk.{i}.attn_q.weight", e, e)
        t(f"blk.{i}.attn_k.weight", e, e)
        t(f"blk.{i}.attn_v.weight", e, e)
        t(f"blk.{i}.attn_output.weight", e, e)
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(e, dtype=np.float32))
        t(f"blk.{i}.ffn_gate.weight", ff, e)
        t(f"blk.{i}.ffn_up.weight", ff, e)
        t(f"blk.{i}.ffn_down.weight", e, ff)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(tmp, path)
    return path


def write_corrupt_model(path: Path, spec: TinySpec | None = None) -> Path:
    """A model whose header is fine but whose tensor data is cut short: llama-server fails to load it."""
    good = write_tiny_model(path.with_name(path.name + ".whole"), spec or TinySpec(name="broken"))
    data = good.read_bytes()
    good.unlink()
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data[: len(data) // 2])
    os.replace(tmp, path)
    return path
