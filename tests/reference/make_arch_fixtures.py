#!/usr/bin/env python3
"""Writes tiny synthetic GGUFs of the architectures the engine opens beyond the default models
(fixtures/arch_<name>.gguf) and llama.cpp's logits on them (fixtures/arch_<name>.json), for
tests/engine/model/arch_llamacpp_test.cpp.

Each model is written by gguf-py's GGUFWriter from a fixed seed and recipe (MODELS below):
2-3 layers, n_embd 64, a 300-token byte-level BPE vocabulary, random weights (F16, with Q8_0
feed-forward matrices in one model), and the metadata real files of that family carry:
  * llama3:       Llama 3.1's RoPE scaling as the converter writes it — no rope.scaling.type, a
                  rope_freqs.weight tensor of per-pair divisors computed by Llama 3.1's recipe
                  (factor 8, low_freq_factor 1, high_freq_factor 4) with
                  original_max_position_embeddings scaled down from 8192 to 256 so that, at head
                  size 16, pairs fall in all three bands (kept, smoothed, divided by 8);
  * llama_linear: rope.scaling.type linear, factor 4;
  * llama_yarn:   rope.scaling.type yarn, factor 4, original_context_length 128;
  * qwen3:        per-head Q/K RMSNorm, NEOX RoPE, head size 32 != n_embd / n_head;
  * olmo2:        no pre-norms; post-attention / post-FFN RMSNorms; RMSNorm of the whole Q
                  and K projections; NEOX RoPE;
  * granite:      the llama layer with Granite 3's embedding / residual / attention / logit
                  multipliers;
  * phi3:         Q, K, V stacked in one attn_qkv.weight and gate, up stacked in ffn_up.weight,
                  NEOX RoPE over 12 of each head's 16 dims (partial rotary), a tied LM head and
                  Phi-3-mini's sliding_window 2047 (which llama.cpp does not apply);
  * gemma2:       attention logit soft-capping (cap 8) and final logit soft-capping (cap 12,
                  both far lower than Gemma 2's 50 / 30 so that they bend these logits), sliding
                  window 32 on layers 0 and 2 (every other layer, as llama.cpp decides), post-
                  attention / post-FFN norms, head size 32 != n_embd / n_head (queries scaled by
                  1/sqrt(key_length)), embeddings scaled by sqrt(n_embd), GELU-tanh gated FFN.
  * qwen3moe, mixtral (a llama with experts), olmoe: mixtures of 8 experts, top-2, 3 layers, an
                  F32 router, stacked ffn_{gate,up,down}_exps (F16; Q8_0 in mixtral); qwen3moe
                  with qwen3's attention and expert_feed_forward_length, olmoe with whole-
                  projection Q/K norms and unrenormalised weights. Their JSON adds llama.cpp's
                  chosen experts per layer and position ("routing": read from its ffn_moe_topk
                  tensors by a cb_eval callback, TopkRecorder) next to the float64 reference's
                  router probabilities, and llama.cpp's greedy 32 tokens after a 16-id prompt.
  * qwen2:        the llama layer with Q, K and V biases, NEOX RoPE;
  * smollm3:      the llama layer, 4 layers: layer 3 (every 4th, as llama.cpp hard-codes for
                  smollm3) without RoPE; a tied LM head; greedy 32 recorded as for the mixtures.
  * mistral3:     the llama layer with YaRN (factor 4, original_context_length 64) and Ministral
                  3's rope.scaling.yarn_log_multiplier 1 (its converter writes 1 unless the
                  checkpoint applies the scale: the rotations then keep magnitude 1), and llama
                  4's attention temperature (attention.temperature_scale 0.1: queries at position
                  p scaled by 1 + 0.1 ln(1 + floor(p / 64)), so positions 64.. are scaled);
                  greedy 32 recorded.
  * gpt_oss:      gpt-oss (general.architecture "gpt-oss"): 4 layers, head size 32 (key_length
                  written, as the real files do), Q/K/V/output biases, a learned sink logit per
                  head (N(0, 1.5^2): some heads lean on it, some barely), sliding window 32 on
                  layers 0 and 2, YaRN (factor 4, original_context_length 64), 8 experts top-2
                  in MXFP4 (the type the real files' experts ship in) with biases on the router
                  and on every expert matrix, the clamped SwiGLU; an untied LM head; greedy 32.
  * deepseek2, deepseek2_legacy: multi-head latent attention in today's MLA form and in the older
                  attn_kv_b form, with DeepSeek's mixture (a dense first layer, shared + routed
                  experts; sigmoid gating, selection bias, expert groups and YaRN in the first;
                  softmax in the second): written by write_deepseek2 (see MLA below); routing and
                  greedy 32 recorded.
llama.cpp (llama-cpp-python, which builds it from source) evaluates one fixed sequence of
N_TOKENS random token ids (fed as ids, positions 0..N_TOKENS-1: far past the original context
lengths, where the scaling matters) with logits for every position. Stored: the ids, llama.cpp's
argmax and top-2 gap at every position, and full logit rows at every STRIDE-th position and the
last — llama.cpp's and, as a second witness written independently of both engines, those of the
float64 reference forward pass (reference_forward.py) with its distance to llama.cpp. The GGUFs are committed with the JSON (each < 310 KB): they are this script's output, and
committing them keeps the C++ test independent of Python at test time (the mixtures' GGUFs are
~0.5 MB: 8 experts x 3 matrices x 3 layers; gpt_oss's 0.7 MB: 4 layers, F16 experts).
Usage: pip install gguf llama-cpp-python && python3 tests/reference/make_arch_fixtures.py
"""
from __future__ import annotations

import importlib.metadata
import json
import math
import platform
import sys
from pathlib import Path

import numpy as np
import gguf
from gguf.quants import quantize

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import reference_forward as rf  # noqa: E402

FIXTURES = HERE / "fixtures"

N_TOKENS = 200
STRIDE = 16
SEED = 20240532
SETTINGS = {"n_ctx": 512, "n_threads": 2, "n_batch": 512, "n_ubatch": 512, "flash_attn": False,
            "type_k": "f16 (default)", "type_v": "f16 (default)"}

BASE = dict(n_layer=2, n_embd=64, n_head=4, n_head_kv=2, head_dim=16, n_ff=96, ctx=4096,
            base=10000.0, eps=1e-5, tied=False, ffn_type="F16", scaling=None, rope_freqs=None,
            granite=None, n_rot=None, fused=False, window=None, softcap=None, moe=None,
            temp_scale=None, greedy=False, gpt_oss=False, mla=None)
MODELS = {
    "llama3": dict(BASE, arch="llama", n_layer=3, ctx=4096, base=500000.0, ffn_type="Q8_0",
                   rope_freqs=dict(factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                                   original_max_position_embeddings=256)),
    "llama_linear": dict(BASE, arch="llama", ctx=1024, scaling=dict(type="linear", factor=4.0)),
    "llama_yarn": dict(BASE, arch="llama", ctx=512,
                       scaling=dict(type="yarn", factor=4.0, original_context_length=128)),
    "qwen3": dict(BASE, arch="qwen3", head_dim=32, base=1000000.0, eps=1e-6, ctx=40960),
    # Granite 3.x's multipliers (granite-3.1-2b: 12, 0.22, 0.015625, 8), attention scale for
    # head size 16 of the same order as its 1/64.
    "olmo2": dict(BASE, arch="olmo2", eps=1e-6, base=500000.0),
    "granite": dict(BASE, arch="granite", ctx=4096,
                    granite=dict(embedding_scale=12.0, residual_scale=0.22,
                                 attention_scale=0.125, logit_scale=8.0)),
    "phi3": dict(BASE, arch="phi3", n_rot=12, fused=True, tied=True, ctx=4096, window=2047,
                 scaling=dict(original_context_length=4096)),
    "gemma2": dict(BASE, arch="gemma2", n_layer=3, head_dim=32, eps=1e-6, ctx=8192, tied=True,
                   window=32, softcap=dict(attn=8.0, final=12.0)),
    # Mixtures of experts: 8 experts, top-2, an F32 router (as the converters keep it).
    # qwen3moe: qwen3's attention, experts expert_feed_forward_length = 32 wide (feed_forward_
    # length 96 is the dense width the file also carries), weights renormalised over the 2.
    "qwen3moe": dict(BASE, arch="qwen3moe", n_layer=3, head_dim=32, base=1000000.0, eps=1e-6,
                     ctx=40960, moe=dict(n_expert=8, n_used=2, n_ff_exp=32)),
    # Mixtral-style llama: experts feed_forward_length = 64 wide, in Q8_0.
    "mixtral": dict(BASE, arch="llama", n_layer=3, n_ff=64, ffn_type="Q8_0", ctx=32768,
                    base=1000000.0, moe=dict(n_expert=8, n_used=2, n_ff_exp=None)),
    # OLMoE: RMSNorm over the whole Q and K projections, weights not renormalised.
    "olmoe": dict(BASE, arch="olmoe", n_layer=3, n_head_kv=4, n_ff=32, ctx=4096,
                  moe=dict(n_expert=8, n_used=2, n_ff_exp=None)),
    # qwen2: the llama layer with Q, K, V biases and NEOX RoPE.
    "qwen2": dict(BASE, arch="qwen2", base=1000000.0, eps=1e-6, ctx=32768),
    "smollm3": dict(BASE, arch="smollm3", n_layer=4, tied=True, ctx=65536, base=5000000.0,
                    eps=1e-6, greedy=True),
    "mistral3": dict(BASE, arch="mistral3", ctx=256, base=1000000.0, greedy=True,
                     scaling=dict(type="yarn", factor=4.0, original_context_length=64,
                                  log_mul=1.0),
                     temp_scale=0.1),
    "gpt_oss": dict(BASE, arch="gpt-oss", n_layer=4, head_dim=32, ctx=256, base=150000.0,
                    window=32, gpt_oss=True,
                    scaling=dict(type="yarn", factor=4.0, original_context_length=64),
                    moe=dict(n_expert=8, n_used=2, n_ff_exp=32, gains=(4.0, 0.5))),
}
# deepseek2: multi-head latent attention (arch_deepseek2.cpp). Heads of 16 no-RoPE + 8 RoPE key
# dims and 16 value dims (key and value sizes differ), a latent of 32, 4 heads; layer 0 a dense
# FFN (leading_dense_block_count 1), layers 1-2 a mixture of 8 experts, top 2, with one shared
# expert, all 32 wide.
#  * deepseek2:        as today's converter writes DeepSeek-V3-style files: the MLA form (attn_k_b /
#                      attn_v_b per head, key_length = latent + RoPE dims, head_count_kv 1), Q
#                      through its own low-rank latent (q_lora_rank 24), sigmoid gating (router
#                      gain 1: probabilities spread over ~0.3-0.7, not saturated at 0 or 1 where
#                      every choice would be a near-tie) with the selection bias exp_probs_b, the
#                      choice limited to the best 2 of 4 expert groups (DeepSeek-V3's group-
#                      limited routing), weights renormalised and scaled by 2.5, YaRN
#                      (factor 4, original context 64) with DeepSeek's mscale_all_dim 0.707
#                      (rope.scaling.yarn_log_multiplier 0.0707: the converter writes 0.1 x it);
#  * deepseek2_legacy: as older converters wrote DeepSeek-V2-Lite: one attn_kv_b holding every
#                      head's key and value up-projections, Q projected directly (q_lora_rank 0),
#                      softmax gating, weights neither renormalised nor scaled, no RoPE scaling.
MLA = dict(n_layer=3, n_embd=64, n_head=4, q_lora=24, kv_lora=32, nope=16, rope=8, v=16, n_ff=96,
           n_dense=1, n_expert=8, n_used=2, n_shared=1, n_ff_exp=32, eps=1e-6, base=10000.0,
           ctx=256)
MODELS["deepseek2"] = dict(BASE, arch="deepseek2", ctx=256, moe=True, greedy=True, mla=dict(
    MLA, form="mla", gating="sigmoid", probs_bias=True, norm_w=True, w_scale=2.5, groups=(4, 2),
    router_gain=1.0,
    scaling=dict(type="yarn", factor=4.0, original_context_length=64, log_mul=0.0707)))
MODELS["deepseek2_legacy"] = dict(BASE, arch="deepseek2", ctx=256, moe=True, greedy=True, mla=dict(
    MLA, form="legacy", q_lora=0, gating="softmax", probs_bias=False, norm_w=False, w_scale=None,
    groups=None, router_gain=4.0, scaling=None))
# The same model with its experts in MXFP4, the type gpt-oss ships them in.
MODELS["gpt_oss_mxfp4"] = dict(MODELS["gpt_oss"], ffn_type="MXFP4", weights_of="gpt_oss")
N_GREEDY_PROMPT, N_GREEDY = 16, 32  # MoE fixtures: llama.cpp's greedy 32 after 16 prompt ids


def llama3_rope_factors(head_dim: int, base: float, cfg: dict) -> np.ndarray:
    """Llama 3.1's per-pair frequency divisors (its published rope_scaling recipe)."""
    freqs = 1.0 / (base ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim))
    old_ctx = cfg["original_max_position_embeddings"]
    lo, hi, factor = cfg["low_freq_factor"], cfg["high_freq_factor"], cfg["factor"]
    out = []
    for f in freqs:
        wavelen = 2 * math.pi / f
        if wavelen < old_ctx / hi:
            out.append(1.0)
        elif wavelen > old_ctx / lo:
            out.append(factor)
        else:
            smooth = (old_ctx / wavelen - lo) / (hi - lo)
            out.append(1.0 / ((1 - smooth) / factor + smooth))
    return np.asarray(out, dtype=np.float32)


def byte_symbols() -> list[str]:
    """GPT-2's byte-to-unicode map."""
    out, nxt = [], 0x100
    for b in range(256):
        printable = 0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or 0xAE <= b <= 0xFF
        out.append(chr(b) if printable else chr(nxt))
        nxt += 0 if printable else 1
    return out


def vocab() -> tuple[list[str], list[int], list[str]]:
    sym = byte_symbols()
    tokens = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] + sym
    types = [3, 3, 3] + [1] * 256
    merges = []
    for a, b in [(" ", "t"), ("h", "e"), ("i", "n"), (" ", "a"), ("e", "r"), ("o", "n")]:
        merges.append(sym[ord(a)] + " " + sym[ord(b)])
        tokens.append(sym[ord(a)] + sym[ord(b)])
        types.append(1)
    while len(tokens) < 300:
        tokens.append(f"<unused{len(tokens)}>")
        types.append(5)
    return tokens, types, merges


def add_tensor(w: gguf.GGUFWriter, name: str, a: np.ndarray, qtype: str) -> None:
    """a: numpy (rows, row_len), (experts, rows, row_len) or (n,), float32."""
    if qtype == "F32" or a.ndim == 1:
        w.add_tensor(name, a.astype(np.float32))
    elif qtype == "F16":
        w.add_tensor(name, a.astype(np.float16))
    else:
        t = gguf.GGMLQuantizationType[qtype]
        w.add_tensor(name, quantize(a.astype(np.float32), t), raw_dtype=t)


def add_vocab(w: gguf.GGUFWriter, tokens: list[str], types: list[int], merges: list[str]) -> None:
    """The byte-level BPE tokenizer every fixture carries (vocab())."""
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(False)


def weight_makers(rng: np.random.Generator):
    """mat(n_out, n_in, gain): a random matrix of rows with unit expected norm x gain; norm(n): an
    RMSNorm weight around 1. Both draw from rng in the order they are called."""
    def mat(n_out: int, n_in: int, gain: float = 1.0) -> np.ndarray:
        return (rng.standard_normal((n_out, n_in)) * gain / math.sqrt(n_in)).astype(np.float32)

    def norm(n: int) -> np.ndarray:
        return (1.0 + 0.2 * rng.standard_normal(n)).astype(np.float32)
    return mat, norm


def write_model(name: str, cfg: dict, path: Path) -> None:
    rng = np.random.default_rng([SEED, sum(map(ord, cfg.get("weights_of", name)))])
    arch = cfg["arch"]
    d, hd, nh, nkv, ff = cfg["n_embd"], cfg["head_dim"], cfg["n_head"], cfg["n_head_kv"], cfg["n_ff"]
    tokens, types, merges = vocab()
    nv = len(tokens)
    w = gguf.GGUFWriter(str(path), arch)
    # Not "phi3" in the name: llama.cpp's vocabulary loader then expects Phi-3's "</s>" token.
    w.add_name(f"fluoro-arch-{name}".replace("phi3", "phi-three"))
    w.add_file_type(1)  # MOSTLY_F16
    w.add_context_length(cfg["ctx"])
    w.add_embedding_length(d)
    w.add_block_count(cfg["n_layer"])
    w.add_feed_forward_length(ff)
    w.add_head_count(nh)
    w.add_head_count_kv(nkv)
    w.add_rope_freq_base(cfg["base"])
    w.add_layer_norm_rms_eps(cfg["eps"])
    w.add_rope_dimension_count(cfg["n_rot"] or hd)
    w.add_vocab_size(nv)
    if hd * nh != d:
        w.add_key_length(hd)
        w.add_value_length(hd)
    if sc := cfg["scaling"]:
        if "type" in sc:
            w.add_rope_scaling_type(gguf.RopeScalingType(sc["type"]))
            w.add_rope_scaling_factor(sc["factor"])
        if "original_context_length" in sc:
            w.add_rope_scaling_orig_ctx_len(sc["original_context_length"])
        if "log_mul" in sc:
            w.add_rope_scaling_yarn_log_mul(sc["log_mul"])
    if cfg["temp_scale"] is not None:
        w.add_attn_temperature_scale(cfg["temp_scale"])
    if cfg["window"] is not None:
        w.add_sliding_window(cfg["window"])
    if c := cfg["softcap"]:
        w.add_attn_logit_softcapping(c["attn"])
        w.add_final_logit_softcapping(c["final"])
    if cfg["gpt_oss"]:  # its converter writes both widths; llama.cpp reads the experts'
        w.add_expert_feed_forward_length(cfg["moe"]["n_ff_exp"])
    if moe := cfg["moe"]:
        w.add_expert_count(moe["n_expert"])
        w.add_expert_used_count(moe["n_used"])
        if moe["n_ff_exp"] and not cfg["gpt_oss"]:
            w.add_expert_feed_forward_length(moe["n_ff_exp"])
    if g := cfg["granite"]:
        w.add_embedding_scale(g["embedding_scale"])
        w.add_residual_scale(g["residual_scale"])
        w.add_attention_scale(g["attention_scale"])
        w.add_logit_scale(g["logit_scale"])
    add_vocab(w, tokens, types, merges)
    mat, norm = weight_makers(rng)

    add_tensor(w, "token_embd.weight", rng.standard_normal((nv, d)).astype(np.float32), "F16")
    if cfg["rope_freqs"]:
        add_tensor(w, "rope_freqs.weight", llama3_rope_factors(hd, cfg["base"], cfg["rope_freqs"]),
                   "F32")
    olmo2 = arch == "olmo2"
    for il in range(cfg["n_layer"]):
        p = f"blk.{il}."
        if not olmo2:
            add_tensor(w, p + "attn_norm.weight", norm(d), "F32")
        if cfg["fused"]:  # phi3: Q, K, V rows in one matrix
            qkv = np.concatenate([mat(nh * hd, d, 2.0), mat(nkv * hd, d, 2.0), mat(nkv * hd, d)])
            add_tensor(w, p + "attn_qkv.weight", qkv, "F16")
        else:
            add_tensor(w, p + "attn_q.weight", mat(nh * hd, d, 2.0), "F16")
            add_tensor(w, p + "attn_k.weight", mat(nkv * hd, d, 2.0), "F16")
            add_tensor(w, p + "attn_v.weight", mat(nkv * hd, d), "F16")
        if arch in ("qwen2", "gpt-oss"):  # Q, K, V biases
            add_tensor(w, p + "attn_q.bias", 0.5 * rng.standard_normal(nh * hd), "F32")
            add_tensor(w, p + "attn_k.bias", 0.5 * rng.standard_normal(nkv * hd), "F32")
            add_tensor(w, p + "attn_v.bias", 0.5 * rng.standard_normal(nkv * hd), "F32")
        if arch in ("qwen3", "qwen3moe"):
            add_tensor(w, p + "attn_q_norm.weight", norm(hd), "F32")
            add_tensor(w, p + "attn_k_norm.weight", norm(hd), "F32")
        if olmo2 or arch == "olmoe":  # over the whole projections
            add_tensor(w, p + "attn_q_norm.weight", norm(nh * hd), "F32")
            add_tensor(w, p + "attn_k_norm.weight", norm(nkv * hd), "F32")
        add_tensor(w, p + "attn_output.weight", mat(d, nh * hd), "F16")
        if cfg["gpt_oss"]:  # the output bias and one sink logit per head
            add_tensor(w, p + "attn_output.bias", 0.2 * rng.standard_normal(d), "F32")
            add_tensor(w, p + "attn_sinks.weight", 1.5 * rng.standard_normal(nh), "F32")
            add_tensor(w, p + "post_attention_norm.weight", norm(d), "F32")
        if olmo2 or arch == "gemma2":
            add_tensor(w, p + "post_attention_norm.weight", 0.5 * norm(d), "F32")
            add_tensor(w, p + "post_ffw_norm.weight", 0.5 * norm(d), "F32")
        if not olmo2 and not cfg["gpt_oss"]:  # gpt-oss's FFN norm is post_attention_norm
            add_tensor(w, p + "ffn_norm.weight", norm(d), "F32")
        if moe:  # router (F32) and the experts stacked {n_in, n_out, n_expert}
            n_e, ffe = moe["n_expert"], moe["n_ff_exp"] or ff
            add_tensor(w, p + "ffn_gate_inp.weight", mat(n_e, d, 4.0), "F32")
            g_in, g_out = moe.get("gains", (1.0, 2.0))
            add_tensor(w, p + "ffn_gate_exps.weight",
                       np.stack([mat(ffe, d, g_in) for _ in range(n_e)]), cfg["ffn_type"])
            add_tensor(w, p + "ffn_up_exps.weight",
                       np.stack([mat(ffe, d, g_in) for _ in range(n_e)]), cfg["ffn_type"])
            add_tensor(w, p + "ffn_down_exps.weight",
                       np.stack([mat(d, ffe, g_out) for _ in range(n_e)]), cfg["ffn_type"])
            if cfg["gpt_oss"]:  # biases: router (n_expert), experts {n_out, n_expert}
                add_tensor(w, p + "ffn_gate_inp.bias", rng.standard_normal(n_e), "F32")
                for t, n_out in (("gate", ffe), ("up", ffe), ("down", d)):
                    add_tensor(w, p + f"ffn_{t}_exps.bias",
                               (0.5 * rng.standard_normal((n_e, n_out))).astype(np.float32),
                               "F32")
        elif cfg["fused"]:  # phi3: gate rows, then up rows
            add_tensor(w, p + "ffn_up.weight", np.concatenate([mat(ff, d), mat(ff, d)]),
                       cfg["ffn_type"])
        else:
            add_tensor(w, p + "ffn_gate.weight", mat(ff, d), cfg["ffn_type"])
            add_tensor(w, p + "ffn_up.weight", mat(ff, d), cfg["ffn_type"])
        if not moe:
            add_tensor(w, p + "ffn_down.weight", mat(d, ff), cfg["ffn_type"])
    add_tensor(w, "output_norm.weight", norm(d), "F32")
    if not cfg["tied"]:
        add_tensor(w, "output.weight", mat(nv, d, 4.0), "F16")
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_deepseek2(name: str, cfg: dict, path: Path) -> None:
    """A deepseek2 file (MODELS above): the same vocabulary and metadata style as write_model."""
    rng = np.random.default_rng([SEED, sum(map(ord, name))])
    c = cfg["mla"]
    d, nh, nope, rd, dv, r = c["n_embd"], c["n_head"], c["nope"], c["rope"], c["v"], c["kv_lora"]
    tokens, types, merges = vocab()
    nv = len(tokens)
    w = gguf.GGUFWriter(str(path), "deepseek2")
    w.add_name(f"fluoro-arch-{name}")
    w.add_file_type(1)
    w.add_context_length(c["ctx"])
    w.add_embedding_length(d)
    w.add_block_count(c["n_layer"])
    w.add_feed_forward_length(c["n_ff"])
    w.add_head_count(nh)
    w.add_rope_freq_base(c["base"])
    w.add_layer_norm_rms_eps(c["eps"])
    w.add_vocab_size(nv)
    w.add_leading_dense_block_count(c["n_dense"])
    w.add_q_lora_rank(c["q_lora"])
    w.add_kv_lora_rank(r)
    if c["form"] == "mla":  # MQA over the latent: one KV head of latent + RoPE dims
        w.add_head_count_kv(1)
        w.add_key_length(r + rd)
        w.add_value_length(r)
        w.add_key_length_mla(nope + rd)
        w.add_value_length_mla(dv)
    else:
        w.add_head_count_kv(nh)
        w.add_key_length(nope + rd)
        w.add_value_length(dv)
    w.add_rope_dimension_count(rd)
    w.add_expert_feed_forward_length(c["n_ff_exp"])
    w.add_expert_count(c["n_expert"])
    w.add_expert_used_count(c["n_used"])
    w.add_expert_shared_count(c["n_shared"])
    if c["w_scale"] is not None:
        w.add_expert_weights_scale(c["w_scale"])
    if c["norm_w"]:
        w.add_expert_weights_norm(True)
    w.add_expert_gating_func(gguf.ExpertGatingFuncType.SIGMOID if c["gating"] == "sigmoid"
                             else gguf.ExpertGatingFuncType.SOFTMAX)
    if c["groups"]:
        w.add_expert_group_count(c["groups"][0])
        w.add_expert_group_used_count(c["groups"][1])
    if sc := c["scaling"]:
        w.add_rope_scaling_type(gguf.RopeScalingType(sc["type"]))
        w.add_rope_scaling_factor(sc["factor"])
        w.add_rope_scaling_orig_ctx_len(sc["original_context_length"])
        w.add_rope_scaling_yarn_log_mul(sc["log_mul"])
    add_vocab(w, tokens, types, merges)
    mat, norm = weight_makers(rng)

    add_tensor(w, "token_embd.weight", rng.standard_normal((nv, d)).astype(np.float32), "F16")
    for il in range(c["n_layer"]):
        p = f"blk.{il}."
        add_tensor(w, p + "attn_norm.weight", norm(d), "F32")
        if c["q_lora"]:
            add_tensor(w, p + "attn_q_a.weight", mat(c["q_lora"], d), "F16")
            add_tensor(w, p + "attn_q_a_norm.weight", norm(c["q_lora"]), "F32")
            add_tensor(w, p + "attn_q_b.weight", mat(nh * (nope + rd), c["q_lora"], 2.0), "F16")
        else:
            add_tensor(w, p + "attn_q.weight", mat(nh * (nope + rd), d, 2.0), "F16")
        add_tensor(w, p + "attn_kv_a_mqa.weight", np.concatenate([mat(r, d), mat(rd, d, 2.0)]),
                   "F16")
        add_tensor(w, p + "attn_kv_a_norm.weight", norm(r), "F32")
        # Per head: the no-RoPE key rows, then the value rows (HF's kv_b_proj layout).
        kv_b = np.stack([np.concatenate([mat(nope, r, 2.0), mat(dv, r)]) for _ in range(nh)])
        if c["form"] == "mla":  # split as the converter does, the key part transposed
            add_tensor(w, p + "attn_k_b.weight",
                       np.ascontiguousarray(kv_b[:, :nope, :].transpose(0, 2, 1)), "F16")
            add_tensor(w, p + "attn_v_b.weight", np.ascontiguousarray(kv_b[:, nope:, :]), "F16")
        else:
            add_tensor(w, p + "attn_kv_b.weight", kv_b.reshape(nh * (nope + dv), r), "F16")
        add_tensor(w, p + "attn_output.weight", mat(d, nh * dv), "F16")
        add_tensor(w, p + "ffn_norm.weight", norm(d), "F32")
        if il < c["n_dense"]:
            add_tensor(w, p + "ffn_gate.weight", mat(c["n_ff"], d), "F16")
            add_tensor(w, p + "ffn_up.weight", mat(c["n_ff"], d), "F16")
            add_tensor(w, p + "ffn_down.weight", mat(d, c["n_ff"]), "F16")
            continue
        n_e, ffe = c["n_expert"], c["n_ff_exp"]
        add_tensor(w, p + "ffn_gate_inp.weight", mat(n_e, d, c["router_gain"]), "F32")
        if c["probs_bias"]:  # of the order of the sigmoid's spread, so it moves some choices
            add_tensor(w, p + "exp_probs_b.bias", 0.1 * rng.standard_normal(n_e), "F32")
        for t, (n_out, n_in, g) in (("gate", (ffe, d, 1.0)), ("up", (ffe, d, 1.0)),
                                   ("down", (d, ffe, 2.0))):
            add_tensor(w, p + f"ffn_{t}_exps.weight",
                       np.stack([mat(n_out, n_in, g) for _ in range(n_e)]), "F16")
        sh = ffe * c["n_shared"]
        add_tensor(w, p + "ffn_gate_shexp.weight", mat(sh, d), "F16")
        add_tensor(w, p + "ffn_up_shexp.weight", mat(sh, d), "F16")
        add_tensor(w, p + "ffn_down_shexp.weight", mat(d, sh), "F16")
    add_tensor(w, "output_norm.weight", norm(d), "F32")
    add_tensor(w, "output.weight", mat(nv, d, 4.0), "F16")
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


class TopkRecorder:
    """llama.cpp's chosen experts: a cb_eval callback (ggml_backend_sched_eval_callback, set in
    the context parameters) asks to see each `ffn_moe_topk-<layer>` tensor (build_moe_ffn's
    top-k expert ids, [n_used, n_tokens] int32) and reads it once computed."""

    def __init__(self):
        import ctypes
        import llama_cpp
        lib = Path(llama_cpp.__file__).parent / "lib"
        self.base = ctypes.CDLL(str(lib / "libggml-base.so"))
        self.cpu = ctypes.CDLL(str(lib / "libggml-cpu.so"))
        self.base.ggml_get_name.restype = ctypes.c_char_p
        self.base.ggml_get_name.argtypes = [ctypes.c_void_p]
        for f in (self.base.ggml_nelements, self.base.ggml_nrows):
            f.restype, f.argtypes = ctypes.c_int64, [ctypes.c_void_p]
        self.cpu.ggml_get_i32_nd.restype = ctypes.c_int32
        self.cpu.ggml_get_i32_nd.argtypes = [ctypes.c_void_p] + [ctypes.c_int] * 4
        self.layers: dict[int, list[list[int]]] = {}
        self.callback = llama_cpp.ggml_backend_sched_eval_callback(self._on_tensor)

    def _on_tensor(self, t, ask, _user) -> bool:
        name = self.base.ggml_get_name(t).decode()
        if not name.startswith("ffn_moe_topk-"):
            return not ask  # ask: not this one; computed: go on
        if ask:
            return True
        rows = self.base.ggml_nrows(t)
        k = self.base.ggml_nelements(t) // rows
        ids = [[self.cpu.ggml_get_i32_nd(t, j, r, 0, 0) for j in range(k)] for r in range(rows)]
        self.layers.setdefault(int(name.split("-")[1]), []).extend(ids)
        return True


def run_llama_cpp(path: Path, ids: list[int], recorder: TopkRecorder | None = None,
                  n_greedy: int = 0):
    """llama.cpp's logits for `ids` (one batch, every position) and, with n_greedy, its greedy
    continuation of ids[:N_GREEDY_PROMPT] (one prefill, then one token per step) with each
    step's top-2 gap."""
    import llama_cpp
    import llama_cpp.llama as high
    defaults = high.llama_cpp.llama_context_default_params
    if recorder:  # Llama() builds its context parameters from this function
        def with_callback():
            p = defaults()
            p.cb_eval = recorder.callback
            return p
        high.llama_cpp.llama_context_default_params = with_callback
    try:
        llm = llama_cpp.Llama(str(path), n_ctx=SETTINGS["n_ctx"], n_threads=SETTINGS["n_threads"],
                              n_batch=SETTINGS["n_batch"], n_ubatch=SETTINGS["n_ubatch"],
                              flash_attn=SETTINGS["flash_attn"], logits_all=True, verbose=False)
    finally:
        high.llama_cpp.llama_context_default_params = defaults
    llm.reset()
    if recorder:
        recorder.layers.clear()
    llm.eval(ids)
    logits = np.asarray(llm.scores[: len(ids)], dtype=np.float64).copy()
    greedy = None
    if n_greedy:
        llm.reset()
        prompt = ids[:N_GREEDY_PROMPT]
        llm.eval(prompt)
        out, gaps = [], []
        for _ in range(n_greedy):
            row = np.asarray(llm.scores[llm.n_tokens - 1], dtype=np.float64)
            order = np.argsort(-row, kind="stable")
            out.append(int(order[0]))
            gaps.append(round(float(row[order[0]] - row[order[1]]), 6))
            llm.eval([out[-1]])
        greedy = {"prompt": prompt, "generated": out, "top2_gap": gaps}
    return logits, greedy


def make(name: str, cfg: dict) -> None:
    gguf_path = FIXTURES / f"arch_{name}.gguf"
    (write_deepseek2 if cfg["arch"] == "deepseek2" else write_model)(name, cfg, gguf_path)
    rng = np.random.default_rng([SEED, 7])
    ids = [int(i) for i in rng.integers(3, 259, N_TOKENS)]  # byte tokens
    recorder = TopkRecorder() if cfg["moe"] else None
    with_greedy = bool(cfg["moe"]) or cfg["greedy"]
    logits, greedy = run_llama_cpp(gguf_path, ids, recorder, N_GREEDY if with_greedy else 0)
    routes: dict[int, np.ndarray] = {}
    ref = rf.forward(rf.GgufModel(str(gguf_path)), ids, routes=routes)  # second witness
    order = np.argsort(-logits, axis=1, kind="stable")
    rows = sorted(set(range(0, N_TOKENS, STRIDE)) | {N_TOKENS - 1})
    out = {
        "generator": "tests/reference/make_arch_fixtures.py",
        "llama_cpp_python": importlib.metadata.version("llama-cpp-python"),
        "gguf": importlib.metadata.version("gguf"),
        "python": platform.python_version(),
        "settings": SETTINGS,
        "model": f"arch_{name}.gguf",
        "recipe": {k: v for k, v in cfg.items()},
        "seed": SEED,
        "ids": ids,
        "argmax": [int(o[0]) for o in order],
        "top2_gap": [round(float(logits[i, order[i, 0]] - logits[i, order[i, 1]]), 6)
                     for i in range(N_TOKENS)],
        "rows": rows,
        "logits": [[round(float(v), 6) for v in logits[r]] for r in rows],
        "reference_f64": [[round(float(v), 6) for v in ref[r]] for r in rows],
        "llama_cpp_vs_f64_max_abs": round(float(np.abs(logits[rows] - ref[rows]).max()), 6),
        "llama_cpp_vs_f64_argmax_agree": int((logits.argmax(1) == ref.argmax(1)).sum()),
    }
    if greedy:
        out["greedy"] = greedy
    if cfg["moe"]:
        moe = cfg["mla"] if cfg["arch"] == "deepseek2" else cfg["moe"]
        k, n_layer = moe["n_used"], (cfg["mla"] or cfg)["n_layer"]
        dense = cfg["mla"]["n_dense"] if cfg["arch"] == "deepseek2" else 0
        # A dense layer routes nothing: its entry is empty (our ExpertChoices row holds -1s).
        topk = [recorder.layers.get(il, [])[:N_TOKENS] for il in range(n_layer)]
        if any(len(t) != N_TOKENS for t in topk[dense:]):
            raise SystemExit(f"{name}: llama.cpp's cb_eval gave no ffn_moe_topk for every layer")
        # llama.cpp's experts per layer and position (most probable first), and the float64
        # reference's router probabilities: the gap between the k-th and the (k+1)-th says how
        # close a position's choice is to a tie.
        out["routing"] = {
            "n_expert": moe["n_expert"], "n_used": k, "dense_layers": dense,
            "llama_cpp_experts": topk,
            "f64_experts": [[[int(e) for e in np.argsort(-p, kind="stable")[:k]]
                             for p in routes.get(il, [])] for il in range(n_layer)],
            # With group-limited routing, the smaller of that gap and the gap between the last
            # kept group's score and the next one's (a near-tie there swaps whole groups).
            "f64_kth_gap": [[round(float(min(np.sort(p)[::-1][k - 1] - np.sort(p)[::-1][k],
                                             routes.get((il, "group_gap"), [np.inf] * (t + 1))[t])),
                                   6)
                             for t, p in enumerate(routes.get(il, []))] for il in range(n_layer)],
        }
        agree = sum(sorted(a) == sorted(b) for il in range(n_layer)
                    for a, b in zip(topk[il], out["routing"]["f64_experts"][il]))
        print(f"{name}: llama.cpp vs f64 routing: {agree}/{(n_layer - dense) * N_TOKENS} equal "
              "sets")
    (FIXTURES / f"arch_{name}.json").write_text(json.dumps(out, indent=None) + "\n")
    print(f"{name}: {gguf_path.stat().st_size} bytes, argmax[-1]={out['argmax'][-1]}, "
          f"min top2 gap={min(out['top2_gap']):.5f}, llama.cpp vs f64: max |d| "
          f"{out['llama_cpp_vs_f64_max_abs']}, argmax agree {out['llama_cpp_vs_f64_argmax_agree']}"
          f"/{N_TOKENS}")


if __name__ == "__main__":
    for n in sys.argv[1:] or MODELS:
        make(n, MODELS[n])
