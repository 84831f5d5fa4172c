#!/usr/bin/env python3
"""Writes a deepseek2 GGUF with DeepSeek-V2-Lite's attention shapes and random weights, for timing
multi-head latent attention (scripts/bench-mla.sh): 16 heads of 128 no-RoPE + 64 RoPE key dims and
128 value dims, a latent of 512, Q projected directly (V2-Lite has no query latent), n_embd 2048,
RoPE base 10000 with no scaling; in the MLA form today's converter writes (attn_k_b / attn_v_b),
or with `--form legacy` as older converters wrote it (attn_kv_b), each path's own form: the engine
runs a form's missing matrices from float32 copies it transposes at load, which would time the
other path on wider weights.
Smaller than V2-Lite elsewhere, so that the file is quick to write and the attention is a visible
share of a step: `--layers` layers (default 4), all with a dense SwiGLU FFN of `--ff` (default
5632; V2-Lite's first layer has 10944, its others 64 routed + 2 shared experts of 1408), and a
32000-token vocabulary. Matrices are Q8_0, norms F32. Random weights: its text is noise, its timings
are the shapes'. Never use it for quality numbers.
  usage: python3 scripts/make_mla_bench_model.py OUT.gguf [--layers N] [--ff N] [--form F]
Needs the `gguf` package (pip install gguf).
"""
from __future__ import annotations

import argparse
import math

import numpy as np
import gguf
from gguf.quants import quantize

D, NH, NOPE, ROPE, DV, R, NV = 2048, 16, 128, 64, 128, 512, 32000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--ff", type=int, default=5632)
    ap.add_argument("--form", choices=("mla", "legacy"), default="mla")
    a = ap.parse_args()
    rng = np.random.default_rng(7)
    w = gguf.GGUFWriter(a.out, "deepseek2")
    w.add_name("fluoro-mla-bench (DeepSeek-V2-Lite attention shapes, random weights)")
    w.add_file_type(7)  # MOSTLY_Q8_0
    w.add_context_length(32768)
    w.add_embedding_length(D)
    w.add_block_count(a.layers)
    w.add_feed_forward_length(a.ff)
    w.add_head_count(NH)
    w.add_head_count_kv(1 if a.form == "mla" else NH)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_vocab_size(NV)
    w.add_leading_dense_block_count(a.layers)
    w.add_q_lora_rank(0)
    w.add_kv_lora_rank(R)
    if a.form == "mla":
        w.add_key_length(R + ROPE)
        w.add_value_length(R)
        w.add_key_length_mla(NOPE + ROPE)
        w.add_value_length_mla(DV)
    else:
        w.add_key_length(NOPE + ROPE)
        w.add_value_length(DV)
    w.add_rope_dimension_count(ROPE)
    w.add_expert_feed_forward_length(1408)
    w.add_expert_shared_count(0)
    tokens = [f"<t{i}>" for i in range(NV)]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types([3, 3, 3] + [1] * (NV - 3))
    w.add_token_merges([])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)

    def mat(n_out: int, n_in: int) -> np.ndarray:
        return (rng.standard_normal((n_out, n_in), dtype=np.float32) / math.sqrt(n_in))

    def q8(name: str, m: np.ndarray) -> None:
        w.add_tensor(name, quantize(m, gguf.GGMLQuantizationType.Q8_0),
                     raw_dtype=gguf.GGMLQuantizationType.Q8_0)

    def norm(n: int) -> np.ndarray:
        return np.ones(n, dtype=np.float32)

    q8("token_embd.weight", rng.standard_normal((NV, D), dtype=np.float32))
    for il in range(a.layers):
        p = f"blk.{il}."
        w.add_tensor(p + "attn_norm.weight", norm(D))
        q8(p + "attn_q.weight", mat(NH * (NOPE + ROPE), D))
        q8(p + "attn_kv_a_mqa.weight", mat(R + ROPE, D))
        w.add_tensor(p + "attn_kv_a_norm.weight", norm(R))
        kv_b = np.stack([np.concatenate([mat(NOPE, R), mat(DV, R)]) for _ in range(NH)])
        if a.form == "mla":
            q8(p + "attn_k_b.weight", np.ascontiguousarray(kv_b[:, :NOPE, :].transpose(0, 2, 1)))
            q8(p + "attn_v_b.weight", np.ascontiguousarray(kv_b[:, NOPE:, :]))
        else:
            q8(p + "attn_kv_b.weight", kv_b.reshape(NH * (NOPE + DV), R))
        q8(p + "attn_output.weight", mat(D, NH * DV))
        w.add_tensor(p + "ffn_norm.weight", norm(D))
        q8(p + "ffn_gate.weight", mat(a.ff, D))
        q8(p + "ffn_up.weight", mat(a.ff, D))
        q8(p + "ffn_down.weight", mat(D, a.ff))
    w.add_tensor("output_norm.weight", norm(D))
    q8("output.weight", mat(NV, D))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
