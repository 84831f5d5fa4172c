#!/usr/bin/env python3
"""Writes an F16 GGUF with the hyperparameters, tensor names and shapes of a real model and seeded
random weights of realistic scale, for measuring speed where users live (1B-8B models read from
memory): speed depends on the shapes and the quantization mix, not on the weights' values (a
mixture's routing aside, which random weights spread evenly). scripts/make-shape-models.sh then
quantizes it with the pinned llama.cpp's own llama-quantize to the mixes users download. Its text
is noise: never use these files for quality numbers.

Shapes (from each model's config.json as published; `--list` prints them):
  llama-3.2-1b   16 layers, 2048 wide, 32 query / 8 KV heads of 64, FFN 8192, 128256 tokens, tied
  llama-3.2-3b   28 layers, 3072 wide, 24 / 8 heads of 128, FFN 8192, 128256 tokens, tied
  llama-3.1-8b   32 layers, 4096 wide, 32 / 8 heads of 128, FFN 14336, 128256 tokens
  gemma-3-4b     34 layers, 2560 wide, 8 / 4 heads of 256, FFN 10240, 262208 tokens, sliding
                 window 1024 on five layers of six, linear RoPE scaling x8 on the global ones
  olmoe-1b-7b    16 layers, 2048 wide, 16 heads of 128, 64 experts (8 used) of FFN 1024,
                 50304 tokens
Llama 3's RoPE scaling is written as its rope_freqs tensor (what convert_hf_to_gguf.py writes).
Deterministic: the same shape, seed and options give the same bytes (numpy's PCG64 stream).
  usage: python3 scripts/make_shape_model.py SHAPE OUT.gguf [--layers N] [--vocab N] [--seed S]
  --layers/--vocab shrink a shape for tests (the real values are the default).
Needs the `gguf` and `numpy` packages.
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass, field

import numpy as np
import gguf


@dataclass(frozen=True)
class Shape:
    arch: str
    name: str
    layers: int
    embd: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    vocab: int
    ctx: int
    rope_base: float
    rms_eps: float
    tied: bool = True
    # llama3 RoPE scaling (factor, low_freq_factor, high_freq_factor, original context)
    llama3_rope: tuple[float, float, float, int] | None = None
    # gemma3
    window: int = 0
    rope_linear: float = 0.0
    # mixture of experts
    experts: int = 0
    experts_used: int = 0
    extra: dict = field(default_factory=dict)


SHAPES = {
    "llama-3.2-1b": Shape("llama", "Llama-3.2-1B shape", 16, 2048, 32, 8, 64, 8192, 128256, 131072,
                          500000.0, 1e-5, llama3_rope=(32.0, 1.0, 4.0, 8192)),
    "llama-3.2-3b": Shape("llama", "Llama-3.2-3B shape", 28, 3072, 24, 8, 128, 8192, 128256, 131072,
                          500000.0, 1e-5, llama3_rope=(32.0, 1.0, 4.0, 8192)),
    "llama-3.1-8b": Shape("llama", "Llama-3.1-8B shape", 32, 4096, 32, 8, 128, 14336, 128256, 131072,
                          500000.0, 1e-5, tied=False, llama3_rope=(8.0, 1.0, 4.0, 8192)),
    "gemma-3-4b": Shape("gemma3", "Gemma-3-4B shape", 34, 2560, 8, 4, 256, 10240, 262208, 131072,
                        1000000.0, 1e-6, window=1024, rope_linear=8.0),
    "olmoe-1b-7b": Shape("olmoe", "OLMoE-1B-7B shape", 16, 2048, 16, 16, 128, 1024, 50304, 4096,
                         10000.0, 1e-5, tied=False, experts=64, experts_used=8),
}


def llama3_rope_freqs(head_dim: int, base: float, scaling: tuple[float, float, float, int]):
    """The per-pair divisors convert_hf_to_gguf.py writes for rope_type llama3."""
    factor, low, high, orig = scaling
    freqs = 1.0 / (base ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim))
    low_wavelen, high_wavelen = orig / low, orig / high
    out = []
    for f in freqs:
        wavelen = 2 * math.pi / f
        if wavelen < high_wavelen:
            out.append(1.0)
        elif wavelen > low_wavelen:
            out.append(factor)
        else:
            smooth = (orig / wavelen - low) / (high - low)
            out.append(1.0 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


class Writer:
    """Tensor infos first, then the data streamed in the same order (an 8B model's 16 GB of F16
    is never in memory at once)."""

    def __init__(self, path: str, arch: str, seed: int):
        self.w = gguf.GGUFWriter(path, arch)
        self.rng = np.random.default_rng(seed)
        self.plan: list[tuple[str, tuple[int, ...], str]] = []

    def matrix(self, name: str, *shape: int) -> None:  # shape as numpy: (..., n_out, n_in)
        self.plan.append((name, shape, "matrix"))

    def norm(self, name: str, n: int) -> None:
        self.plan.append((name, (n,), "norm"))

    def f32(self, name: str, values: np.ndarray) -> None:
        self.plan.append((name, values.shape, values))

    def write(self) -> None:
        for name, shape, kind in self.plan:
            dtype = np.float16 if isinstance(kind, str) and kind == "matrix" else np.float32
            self.w.add_tensor_info(name, shape, np.dtype(dtype), int(np.prod(shape)) *
                                   np.dtype(dtype).itemsize)
        self.w.write_header_to_file()
        self.w.write_kv_data_to_file()
        self.w.write_ti_data_to_file()
        for name, shape, kind in self.plan:
            if isinstance(kind, np.ndarray):
                self.w.write_tensor_data(kind)
            elif kind == "norm":
                self.w.write_tensor_data(np.ones(shape, dtype=np.float32))
            else:
                self.w.write_tensor_data(self.random(shape))
        self.w.close()

    def random(self, shape: tuple[int, ...]) -> np.ndarray:
        # Normal, std 1/sqrt(n_in) (a trained matrix's scale: activations keep their size),
        # generated a slab at a time to bound memory; float32 -> float16.
        n_in = shape[-1]
        out = np.empty(shape, dtype=np.float16)
        flat = out.reshape(-1, n_in)
        step = max(1, (1 << 24) // n_in)
        for r in range(0, flat.shape[0], step):
            block = self.rng.standard_normal((min(step, flat.shape[0] - r), n_in), dtype=np.float32)
            flat[r:r + block.shape[0]] = block * np.float32(1 / math.sqrt(n_in))
        return out


def tokenizer(w: gguf.GGUFWriter, vocab: int) -> None:
    # Byte-level BPE with placeholder tokens and one merge (llama.cpp refuses a BPE vocabulary
    # without merges): loads in both engines; prompts are token ids (bench) and the text is
    # never read.
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list([f"<t{i}>" for i in range(vocab)])
    w.add_token_types([3, 3, 3] + [1] * (vocab - 3))
    w.add_token_merges(["<t3> <t4>"])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)


def parameters(s: Shape) -> int:
    """Weights in the file (norms and rope_freqs aside)."""
    q, kv = s.heads * s.head_dim, s.kv_heads * s.head_dim
    ffn = 3 * s.embd * s.ffn * max(1, s.experts) + s.embd * s.experts
    layer = s.embd * (q + 2 * kv) + q * s.embd + ffn
    return s.vocab * s.embd * (1 if s.tied else 2) + s.layers * layer


def build(shape: Shape, out: str, seed: int) -> None:
    s = shape
    wr = Writer(out, s.arch, seed)
    w = wr.w
    w.add_name(s.name + " (random weights)")
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    w.add_context_length(s.ctx)
    w.add_embedding_length(s.embd)
    w.add_block_count(s.layers)
    w.add_feed_forward_length(s.ffn)
    w.add_head_count(s.heads)
    w.add_head_count_kv(s.kv_heads)
    w.add_rope_freq_base(s.rope_base)
    w.add_layer_norm_rms_eps(s.rms_eps)
    if s.arch == "llama":
        w.add_vocab_size(s.vocab)
        w.add_rope_dimension_count(s.head_dim)
        if s.head_dim != s.embd // s.heads:
            w.add_key_length(s.head_dim)
            w.add_value_length(s.head_dim)
    if s.arch == "gemma3":
        w.add_key_length(s.head_dim)
        w.add_value_length(s.head_dim)
        w.add_sliding_window(s.window)
        w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        w.add_rope_scaling_factor(s.rope_linear)
    if s.arch == "olmoe":  # feed_forward_length is each expert's (convert_hf_to_gguf.py's OLMoE)
        w.add_expert_count(s.experts)
        w.add_expert_used_count(s.experts_used)
    tokenizer(w, s.vocab)

    q_dim, kv_dim = s.heads * s.head_dim, s.kv_heads * s.head_dim
    wr.matrix("token_embd.weight", s.vocab, s.embd)
    if s.llama3_rope:
        wr.f32("rope_freqs.weight", llama3_rope_freqs(s.head_dim, s.rope_base, s.llama3_rope))
    for il in range(s.layers):
        p = f"blk.{il}."
        wr.norm(p + "attn_norm.weight", s.embd)
        wr.matrix(p + "attn_q.weight", q_dim, s.embd)
        wr.matrix(p + "attn_k.weight", kv_dim, s.embd)
        wr.matrix(p + "attn_v.weight", kv_dim, s.embd)
        if s.arch == "gemma3":
            wr.norm(p + "attn_q_norm.weight", s.head_dim)
            wr.norm(p + "attn_k_norm.weight", s.head_dim)
        if s.arch == "olmoe":  # OLMoE normalizes q and k over all heads at once
            wr.norm(p + "attn_q_norm.weight", q_dim)
            wr.norm(p + "attn_k_norm.weight", kv_dim)
        wr.matrix(p + "attn_output.weight", s.embd, q_dim)
        if s.arch == "gemma3":
            wr.norm(p + "post_attention_norm.weight", s.embd)
        wr.norm(p + "ffn_norm.weight", s.embd)
        if s.experts:
            wr.matrix(p + "ffn_gate_inp.weight", s.experts, s.embd)
            wr.matrix(p + "ffn_gate_exps.weight", s.experts, s.ffn, s.embd)
            wr.matrix(p + "ffn_up_exps.weight", s.experts, s.ffn, s.embd)
            wr.matrix(p + "ffn_down_exps.weight", s.experts, s.embd, s.ffn)
        else:
            wr.matrix(p + "ffn_gate.weight", s.ffn, s.embd)
            wr.matrix(p + "ffn_up.weight", s.ffn, s.embd)
            wr.matrix(p + "ffn_down.weight", s.embd, s.ffn)
        if s.arch == "gemma3":
            wr.norm(p + "post_ffw_norm.weight", s.embd)
    wr.norm("output_norm.weight", s.embd)
    if not s.tied:
        wr.matrix("output.weight", s.vocab, s.embd)
    wr.write()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("shape", nargs="?", choices=sorted(SHAPES))
    ap.add_argument("out", nargs="?")
    ap.add_argument("--layers", type=int, help="fewer layers than the real model (tests)")
    ap.add_argument("--vocab", type=int, help="a smaller vocabulary than the real model (tests)")
    ap.add_argument("--seed", type=int, default=20261208)
    ap.add_argument("--list", action="store_true", help="print the shapes and exit")
    ap.add_argument("--params", action="store_true", help="print SHAPE's parameter count and exit")
    a = ap.parse_args()
    if a.list:
        for k, s in SHAPES.items():
            print(k, s)
        return 0
    if a.params and a.shape:
        print(parameters(SHAPES[a.shape]))
        return 0
    if not a.shape or not a.out:
        ap.error("SHAPE and OUT are required")
    shape = SHAPES[a.shape]
    changes = {}
    if a.layers:
        changes["layers"] = a.layers
    if a.vocab:
        changes["vocab"] = a.vocab
    if changes:
        shape = Shape(**{**shape.__dict__, **changes})
    build(shape, a.out, a.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
