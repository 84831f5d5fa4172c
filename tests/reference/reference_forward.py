#!/usr/bin/env python3
"""An independent float64 forward pass for the llama (with llama3 / linear / YaRN RoPE scaling,
and Mixtral-style experts), qwen2, qwen3, qwen3moe, olmoe, granite, olmo2, phi3, gemma2, gemma3
and gpt-oss GGUF architectures.

Written from the architectures' published definitions (Hugging Face modeling code as
documented, llama.cpp's GGUF conventions), sharing no code with the C++ engine: weights are
dequantized by the `gguf` package from PyPI, everything else is plain numpy in float64.
It is the oracle for tests/engine/model logits fixtures (see make_logits_fixtures.py).

GGUF conventions this relies on (checked against the default model files):
  * tensors are stored with ne[0] innermost, so numpy shape (out, in) after reshape;
  * llama-arch Q/K weights were permuted by the converter for adjacent-pair ("NORM") RoPE;
    gemma3 is not permuted and uses NEOX pairing (i, i + d/2);
  * gemma3 norm weights already include the +1 of Gemma's (1 + w) RMSNorm;
  * the LM head is tied to token_embd when output.weight is absent.
"""
from __future__ import annotations

import math
import sys

import numpy as np
import gguf
from gguf.quants import dequantize


class GgufModel:
    def __init__(self, path: str):
        self.reader = gguf.GGUFReader(path)
        self.tensors = {t.name: t for t in self.reader.tensors}
        self.arch = self.field("general.architecture")

    def field(self, key, default=None):
        f = self.reader.fields.get(key)
        return default if f is None else f.contents()

    def hp(self, key, default=None):
        return self.field(f"{self.arch}.{key}", default)

    def weight(self, name: str) -> np.ndarray:
        t = self.tensors[name]
        w = dequantize(t.data, t.tensor_type).astype(np.float64)
        shape = [int(d) for d in reversed(t.shape)]
        return w.reshape(shape)

    def has(self, name: str) -> bool:
        return name in self.tensors


def rms_norm(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rope_angles(m: "GgufModel", n_rot: int, base: float) -> tuple[np.ndarray, float]:
    """Per-pair angle per position (inv_freq, (half,)) and the magnitude of cos/sin, from the
    file's RoPE scaling: llama3's rope_freqs divisors, linear (rope.scaling.factor), YaRN."""
    half = n_rot // 2
    inv = base ** (-np.arange(half, dtype=np.float64) * 2.0 / n_rot)
    if m.has("rope_freqs.weight"):  # llama3: angle of pair i divided by factor i
        inv = inv / m.weight("rope_freqs.weight").reshape(-1)[:half]
    kind = m.hp("rope.scaling.type", "linear")
    factor = float(m.hp("rope.scaling.factor", m.hp("rope.scale_linear", 1.0)))
    if kind == "none" or factor == 0:
        factor = 1.0
    mscale = float(m.hp("rope.scaling.attn_factor", 1.0))
    if kind != "yarn":
        return inv / factor, mscale
    # YaRN (Peng et al. 2023): pairs turning more than beta_fast times over the original context
    # keep their frequency, those turning fewer than beta_slow times are interpolated by the
    # factor, a linear ramp between (bounds rounded outward); q and k scaled by 0.1 ln(s) + 1.
    n_orig = float(m.hp("rope.scaling.original_context_length", m.hp("context_length")))
    beta_fast = float(m.hp("rope.scaling.yarn_beta_fast", 32.0))
    beta_slow = float(m.hp("rope.scaling.yarn_beta_slow", 1.0))
    ext = float(m.hp("rope.scaling.yarn_ext_factor", 1.0))

    def pair_turning(turns: float) -> float:
        return n_rot * math.log(n_orig / (turns * 2 * math.pi)) / (2 * math.log(base))

    lo = max(0.0, math.floor(pair_turning(beta_fast)))
    hi = min(n_rot - 1.0, math.ceil(pair_turning(beta_slow)))
    ramp = np.clip((np.arange(half) - lo) / max(0.001, hi - lo), 0.0, 1.0)
    keep = (1.0 - ramp) * ext
    inv = (inv / factor) * (1.0 - keep) + inv * keep
    # Ministral 3's rope.scaling.yarn_log_multiplier L (HF's mscale_all_dim, with mscale 1): the
    # magnitude get_mscale(s, 1) / get_mscale(s, L), get_mscale(s, m) = 0.1 m ln(s) + 1.
    log_mul = float(m.hp("rope.scaling.yarn_log_multiplier", 0.0))
    if log_mul:
        return inv, mscale * (1.0 + 0.1 * math.log(factor)) / (1.0 + 0.1 * log_mul * math.log(factor))
    return inv, mscale * (1.0 + 0.1 * math.log(factor))


def rope(x: np.ndarray, positions: np.ndarray, n_rot: int, base: float, neox: bool,
         angles: tuple[np.ndarray, float] | None = None) -> np.ndarray:
    """x: (n_tok, n_head, head_dim). Rotates the first n_rot dims of each head."""
    out = x.copy()
    half = n_rot // 2
    inv_freq, mscale = angles or (base ** (-np.arange(half, dtype=np.float64) * 2.0 / n_rot), 1.0)
    theta = positions[:, None].astype(np.float64) * inv_freq[None, :]  # (n_tok, half)
    cos, sin = mscale * np.cos(theta)[:, None, :], mscale * np.sin(theta)[:, None, :]
    if neox:
        a, b = x[..., :half], x[..., half:n_rot]
    else:
        a, b = x[..., 0:n_rot:2], x[..., 1:n_rot:2]
    ra, rb = a * cos - b * sin, a * sin + b * cos
    if neox:
        out[..., :half], out[..., half:n_rot] = ra, rb
    else:
        out[..., 0:n_rot:2], out[..., 1:n_rot:2] = ra, rb
    return out


def attention(q, k, v, scale: float, window: int = 0, softcap: float = 0.0,
              sinks: np.ndarray | None = None) -> np.ndarray:
    """q: (n, Hq, d), k/v: (n, Hkv, d); causal (and sliding-window if window > 0); GQA;
    scores soft-capped to cap * tanh(score / cap) before the mask if softcap > 0 (Gemma 2);
    sinks (gpt-oss, one logit per query head) join each row's softmax denominator with no value."""
    n, n_head, d = q.shape
    group = n_head // k.shape[1]
    out = np.zeros((n, n_head, v.shape[2]))
    i = np.arange(n)[:, None]
    j = np.arange(n)[None, :]
    masked = j > i
    if window > 0:
        masked |= (i - j) >= window
    for h in range(n_head):
        s = (q[:, h, :] @ k[:, h // group, :].T) * scale
        if softcap > 0:
            s = softcap * np.tanh(s / softcap)
        s = np.where(masked, -np.inf, s)
        top = s.max(axis=1, keepdims=True)
        if sinks is not None:
            top = np.maximum(top, sinks[h])
        p = np.exp(s - top)
        denom = p.sum(axis=1, keepdims=True)
        if sinks is not None:
            denom = denom + np.exp(sinks[h] - top)
        p /= denom
        out[:, h, :] = p @ v[:, h // group, :]
    return out


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def silu(x):
    return x / (1.0 + np.exp(-x))


def softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def moe_ffn(m: GgufModel, p: str, x: np.ndarray, routes: list | None) -> np.ndarray:
    """A mixture of experts (Mixtral, Qwen3-MoE, OLMoE): softmax over the router's scores, the
    expert_used_count most probable experts, each weighted by its probability — renormalised over
    the chosen ones except in OLMoE (its norm_topk_prob is false) — summing their SwiGLU FFNs."""
    k = int(m.hp("expert_used_count"))
    probs = softmax(x @ m.weight(p + "ffn_gate_inp.weight").T)  # (n, n_expert)
    if routes is not None:
        routes.append(probs)
    gate, up, down = (m.weight(p + f"ffn_{t}_exps.weight") for t in ("gate", "up", "down"))
    out = np.zeros_like(x)
    for r in range(x.shape[0]):
        chosen = np.argsort(-probs[r], kind="stable")[:k]
        w = probs[r, chosen]
        if m.arch != "olmoe":
            w = w / w.sum()
        for e, we in zip(chosen, w):
            out[r] += we * (down[e] @ (silu(gate[e] @ x[r]) * (up[e] @ x[r])))
    return out


def decoder_dims(m: GgufModel) -> tuple[int, int, int, int, int, float, float]:
    """n_head, n_head_kv, n_embd, head size, rotated dims, RoPE base and RMS epsilon."""
    n_head = int(m.hp("attention.head_count"))
    n_head_kv = int(m.hp("attention.head_count_kv", n_head))
    n_embd = int(m.hp("embedding_length"))
    head_dim = int(m.hp("attention.key_length", n_embd // n_head))
    n_rot = int(m.hp("rope.dimension_count", head_dim))
    base = float(m.hp("rope.freq_base", 10000.0))
    return (n_head, n_head_kv, n_embd, head_dim, n_rot, base,
            float(m.hp("attention.layer_norm_rms_epsilon")))


def lm_head(m: GgufModel, h: np.ndarray) -> np.ndarray:
    """Logits from the final norm's output: output.weight (token_embd when tied), divided by
    granite's logit_scale, soft-capped where the file says so (Gemma 2: 30 by default)."""
    w = m.weight("output.weight") if m.has("output.weight") else m.weight("token_embd.weight")
    logits = (h @ w.T) / float(m.hp("logit_scale", 1.0))
    cap = m.hp("final_logit_softcapping", 30.0 if m.arch == "gemma2" else None)
    if cap:
        logits = cap * np.tanh(logits / cap)
    return logits


def forward_llama(m: GgufModel, tokens: list[int], last_only: bool,
                  routes: dict | None = None, hidden_only: bool = False) -> np.ndarray:
    n_head, n_head_kv, n_embd, head_dim, n_rot, base, eps = decoder_dims(m)
    pos = np.arange(len(tokens))
    angles = rope_angles(m, n_rot, base)
    embd = m.weight("token_embd.weight")
    h = embd[tokens] * float(m.hp("embedding_scale", 1.0))  # granite's multipliers
    res_scale = float(m.hp("residual_scale", 1.0))
    kq_scale = float(m.hp("attention.scale", 1.0 / math.sqrt(head_dim)))
    temp_scale = float(m.hp("attention.temperature_scale", 0.0))
    temp_floor = float(m.hp("rope.scaling.original_context_length", m.hp("context_length")))
    for il in range(int(m.hp("block_count"))):
        p = f"blk.{il}."
        x = rms_norm(h, m.weight(p + "attn_norm.weight"), eps)
        if m.has(p + "attn_qkv.weight"):  # phi3: Q, K, V rows stacked in one matrix
            wq, wk, wv = np.split(m.weight(p + "attn_qkv.weight"),
                                  [n_head * head_dim, (n_head + n_head_kv) * head_dim])
        else:
            wq, wk, wv = (m.weight(p + f"attn_{t}.weight") for t in "qkv")
        q = (x @ wq.T).reshape(len(tokens), n_head, head_dim)
        k = (x @ wk.T).reshape(len(tokens), n_head_kv, head_dim)
        v = (x @ wv.T).reshape(len(tokens), n_head_kv, head_dim)
        if m.has(p + "attn_q.bias"):
            q = q + m.weight(p + "attn_q.bias").reshape(n_head, head_dim)
            k = k + m.weight(p + "attn_k.bias").reshape(n_head_kv, head_dim)
            v = v + m.weight(p + "attn_v.bias").reshape(n_head_kv, head_dim)
        if m.has(p + "attn_q_norm.weight"):  # qwen3: RMSNorm over each head, before RoPE
            wqn, wkn = m.weight(p + "attn_q_norm.weight"), m.weight(p + "attn_k_norm.weight")
            if wqn.size == head_dim:
                q, k = rms_norm(q, wqn, eps), rms_norm(k, wkn, eps)
            else:  # olmoe: over the whole projections
                q = rms_norm(q.reshape(len(tokens), -1), wqn, eps).reshape(q.shape)
                k = rms_norm(k.reshape(len(tokens), -1), wkn, eps).reshape(k.shape)
        neox = m.arch in ("qwen2", "qwen3", "phi3", "qwen3moe", "olmoe")
        if not (m.arch == "smollm3" and (il + 1) % 4 == 0):  # smollm3: every 4th layer no RoPE
            q = rope(q, pos, n_rot, base, neox, angles)
            k = rope(k, pos, n_rot, base, neox, angles)
        if temp_scale:  # mistral3: llama 4's attention temperature, q *= 1 + b*ln(1 + floor(p/L))
            q = q * (1.0 + temp_scale * np.log1p(np.floor(pos / temp_floor)))[:, None, None]
        a = attention(q, k, v, kq_scale).reshape(len(tokens), -1)
        h = h + res_scale * (a @ m.weight(p + "attn_output.weight").T)
        x = rms_norm(h, m.weight(p + "ffn_norm.weight"), eps)
        if m.has(p + "ffn_gate_inp.weight"):
            layer_routes = [] if routes is not None else None
            h = h + moe_ffn(m, p, x, layer_routes)
            if routes is not None:
                routes[il] = layer_routes[0]
            continue
        if m.has(p + "ffn_gate.weight"):
            wg, wu = m.weight(p + "ffn_gate.weight"), m.weight(p + "ffn_up.weight")
        else:  # phi3: gate rows, then up rows, in ffn_up
            wg, wu = np.split(m.weight(p + "ffn_up.weight"), 2)
        g = silu(x @ wg.T) * (x @ wu.T)
        h = h + res_scale * (g @ m.weight(p + "ffn_down.weight").T)
    if last_only:
        h = h[-1:]
    h = rms_norm(h, m.weight("output_norm.weight"), eps)
    if hidden_only:  # the LM head's input (fidelity_reference.py)
        return h
    return lm_head(m, h)


def forward_gemma3(m: GgufModel, tokens: list[int], last_only: bool,
                   hidden_only: bool = False) -> np.ndarray:
    n_head = int(m.hp("attention.head_count"))
    n_head_kv = int(m.hp("attention.head_count_kv", n_head))
    n_embd = int(m.hp("embedding_length"))
    head_dim = int(m.hp("attention.key_length", n_embd // n_head))
    eps = float(m.hp("attention.layer_norm_rms_epsilon"))
    gemma2 = m.arch == "gemma2"
    window = int(m.hp("attention.sliding_window", 4096 if gemma2 else 0))
    base_global = float(m.hp("rope.freq_base", 1000000.0 if not gemma2 else 10000.0))
    # Gemma 3's local (sliding-window) layers turn at base 10000; Gemma 2's at the global base.
    base_local = float(m.hp("rope.freq_base_swa", base_global if gemma2 else 10000.0))
    # Gemma 2: attention scores and logits soft-capped (defaults 50 and 30); queries scaled by
    # 1/sqrt(head size), or 1/sqrt(n_embd / n_head) for the 27B (46 layers; Gemma's config).
    n_layer = int(m.hp("block_count"))
    attn_cap = float(m.hp("attn_logit_softcapping", 50.0)) if gemma2 else 0.0
    scale = 1.0 / math.sqrt(n_embd // n_head if gemma2 and n_layer == 46 else head_dim)
    n = len(tokens)
    pos = np.arange(n)
    embd = m.weight("token_embd.weight")
    h = embd[tokens] * math.sqrt(n_embd)
    for il in range(int(m.hp("block_count"))):
        p = f"blk.{il}."
        is_global = il % 2 == 1 if gemma2 else il % 6 == 5
        x = rms_norm(h, m.weight(p + "attn_norm.weight"), eps)
        q = (x @ m.weight(p + "attn_q.weight").T).reshape(n, n_head, head_dim)
        k = (x @ m.weight(p + "attn_k.weight").T).reshape(n, n_head_kv, head_dim)
        v = (x @ m.weight(p + "attn_v.weight").T).reshape(n, n_head_kv, head_dim)
        if not gemma2:
            q = rms_norm(q, m.weight(p + "attn_q_norm.weight"), eps)
            k = rms_norm(k, m.weight(p + "attn_k_norm.weight"), eps)
        base = base_global if is_global else base_local
        q, k = rope(q, pos, head_dim, base, True), rope(k, pos, head_dim, base, True)
        a = attention(q, k, v, scale, 0 if is_global else window, attn_cap)
        a = a.reshape(n, -1) @ m.weight(p + "attn_output.weight").T
        h = h + rms_norm(a, m.weight(p + "post_attention_norm.weight"), eps)
        x = rms_norm(h, m.weight(p + "ffn_norm.weight"), eps)
        g = gelu_tanh(x @ m.weight(p + "ffn_gate.weight").T) * (x @ m.weight(p + "ffn_up.weight").T)
        f = g @ m.weight(p + "ffn_down.weight").T
        h = h + rms_norm(f, m.weight(p + "post_ffw_norm.weight"), eps)
    if last_only:
        h = h[-1:]
    h = rms_norm(h, m.weight("output_norm.weight"), eps)
    if hidden_only:  # the LM head's input (fidelity_reference.py)
        return h
    return lm_head(m, h)


def forward_olmo2(m: GgufModel, tokens: list[int], last_only: bool,
                  hidden_only: bool = False) -> np.ndarray:
    """OLMo 2: no pre-norms; RMSNorm of the attention and FFN outputs before each residual add;
    RMSNorm over the whole Q and K projections (not per head) before NEOX RoPE."""
    n_head, n_head_kv, n_embd, head_dim, n_rot, base, eps = decoder_dims(m)
    pos = np.arange(len(tokens))
    angles = rope_angles(m, n_rot, base)
    h = m.weight("token_embd.weight")[tokens]
    n = len(tokens)
    for il in range(int(m.hp("block_count"))):
        p = f"blk.{il}."
        q = rms_norm(h @ m.weight(p + "attn_q.weight").T, m.weight(p + "attn_q_norm.weight"), eps)
        k = rms_norm(h @ m.weight(p + "attn_k.weight").T, m.weight(p + "attn_k_norm.weight"), eps)
        v = (h @ m.weight(p + "attn_v.weight").T).reshape(n, n_head_kv, head_dim)
        q = rope(q.reshape(n, n_head, head_dim), pos, n_rot, base, True, angles)
        k = rope(k.reshape(n, n_head_kv, head_dim), pos, n_rot, base, True, angles)
        a = attention(q, k, v, 1.0 / math.sqrt(head_dim)).reshape(n, -1)
        h = h + rms_norm(a @ m.weight(p + "attn_output.weight").T,
                         m.weight(p + "post_attention_norm.weight"), eps)
        g = silu(h @ m.weight(p + "ffn_gate.weight").T) * (h @ m.weight(p + "ffn_up.weight").T)
        h = h + rms_norm(g @ m.weight(p + "ffn_down.weight").T,
                         m.weight(p + "post_ffw_norm.weight"), eps)
    if last_only:
        h = h[-1:]
    h = rms_norm(h, m.weight("output_norm.weight"), eps)
    if hidden_only:  # the LM head's input (fidelity_reference.py)
        return h
    return lm_head(m, h)


def moe_ffn_gpt_oss(m: GgufModel, p: str, x: np.ndarray, routes: list | None) -> np.ndarray:
    """gpt-oss's experts: router logits with a bias, the expert_used_count largest, weighted by
    the softmax of those logits alone; each expert's gate and up projections with biases, the
    clamped SwiGLU (OpenAI's reference: alpha 1.702, limit 7: gate clamped above, up on both
    sides, out = g * sigmoid(alpha g) * (u + 1)), then the down projection with its bias."""
    k = int(m.hp("expert_used_count"))
    logits = x @ m.weight(p + "ffn_gate_inp.weight").T + m.weight(p + "ffn_gate_inp.bias")
    if routes is not None:
        routes.append(softmax(logits))  # the same order as the logits
    w = {t: m.weight(p + f"ffn_{t}_exps.weight") for t in ("gate", "up", "down")}
    b = {t: m.weight(p + f"ffn_{t}_exps.bias") for t in ("gate", "up", "down")}
    out = np.zeros_like(x)
    alpha, limit = 1.702, 7.0
    for r in range(x.shape[0]):
        chosen = np.argsort(-logits[r], kind="stable")[:k]
        weights = softmax(logits[r, chosen])
        for e, we in zip(chosen, weights):
            g = np.minimum(w["gate"][e] @ x[r] + b["gate"][e], limit)
            u = np.clip(w["up"][e] @ x[r] + b["up"][e], -limit, limit)
            act = g / (1.0 + np.exp(-alpha * g)) * (u + 1.0)
            out[r] += we * (w["down"][e] @ act + b["down"][e])
    return out


def forward_gpt_oss(m: GgufModel, tokens: list[int], last_only: bool,
                    routes: dict | None = None, hidden_only: bool = False) -> np.ndarray:
    """gpt-oss (OpenAI's model card and reference implementation): pre-norm blocks; attention
    with Q/K/V/output biases, NEOX RoPE (YaRN), q.k / sqrt(head size), a learned sink logit per
    head; even layers over a sliding window, odd ones over everything; the experts above."""
    n_head, n_head_kv, _, head_dim, n_rot, base, eps = decoder_dims(m)
    base_swa = float(m.hp("rope.freq_base_swa", base))
    window = int(m.hp("attention.sliding_window"))
    n = len(tokens)
    pos = np.arange(n)
    h = m.weight("token_embd.weight")[tokens]
    for il in range(int(m.hp("block_count"))):
        p = f"blk.{il}."
        local = il % 2 == 0
        angles = rope_angles(m, n_rot, base_swa if local else base)
        x = rms_norm(h, m.weight(p + "attn_norm.weight"), eps)
        q = x @ m.weight(p + "attn_q.weight").T + m.weight(p + "attn_q.bias")
        k = x @ m.weight(p + "attn_k.weight").T + m.weight(p + "attn_k.bias")
        v = x @ m.weight(p + "attn_v.weight").T + m.weight(p + "attn_v.bias")
        q = rope(q.reshape(n, n_head, head_dim), pos, n_rot, base, True, angles)
        k = rope(k.reshape(n, n_head_kv, head_dim), pos, n_rot, base, True, angles)
        v = v.reshape(n, n_head_kv, head_dim)
        a = attention(q, k, v, 1.0 / math.sqrt(n_rot), window if local else 0,
                      sinks=m.weight(p + "attn_sinks.weight").reshape(-1))
        h = h + a.reshape(n, -1) @ m.weight(p + "attn_output.weight").T + \
            m.weight(p + "attn_output.bias")
        x = rms_norm(h, m.weight(p + "post_attention_norm.weight"), eps)
        layer_routes = [] if routes is not None else None
        h = h + moe_ffn_gpt_oss(m, p, x, layer_routes)
        if routes is not None:
            routes[il] = layer_routes[0]
    if last_only:
        h = h[-1:]
    h = rms_norm(h, m.weight("output_norm.weight"), eps)
    if hidden_only:  # the LM head's input (fidelity_reference.py)
        return h
    return lm_head(m, h)


def forward_deepseek2(m: GgufModel, tokens: list[int], last_only: bool,
                      routes: dict | None = None, hidden_only: bool = False) -> np.ndarray:
    """DeepSeek-V2/V3's multi-head latent attention, written from the paper's equations (no
    weight absorption: every head's key and value are up-projected from the latent), in either
    GGUF form: attn_kv_b (older files) or attn_k_b / attn_v_b (per head, the key part
    transposed). Per head h, with c = RMSNorm(x W_DKV) the latent and k_R = RoPE(x W_KR) one RoPE
    key shared by all heads: k_h = [c W_UK_h, k_R], v_h = c W_UV_h, q_h = [q_nope_h, RoPE(q_R_h)]
    (q from x directly or through its own latent c_Q = RMSNorm(x W_DQ)). RoPE pairs adjacent
    dims (llama.cpp's NORM). Scores scaled by mscale^2 / sqrt(nope + rope) with YaRN's
    mscale = 0.1 L ln(s) + 1, L = rope.scaling.yarn_log_multiplier / 0.1 (DeepSeek's converter
    writes 0.1 x mscale_all_dim), and the rotations then keep magnitude 1 (HF: mscale equals
    mscale_all_dim, their ratio is 1). The FFN: leading_dense_block_count dense SwiGLU layers,
    then routed experts (softmax or sigmoid probabilities; the top k by probability plus
    exp_probs_b, among the expert_group_used_count groups whose two best such scores sum highest
    when expert_group_count > 1; weights the unbiased probabilities, renormalised when expert_weights_norm, times
    expert_weights_scale) plus the shared experts."""
    n = len(tokens)
    nh = int(m.hp("attention.head_count"))
    eps = float(m.hp("attention.layer_norm_rms_epsilon"))
    rd = int(m.hp("rope.dimension_count"))
    r = int(m.hp("attention.kv_lora_rank"))
    mla = m.hp("attention.key_length_mla") is not None
    k_head = int(m.hp("attention.key_length_mla" if mla else "attention.key_length"))
    dv = int(m.hp("attention.value_length_mla" if mla else "attention.value_length"))
    nope = k_head - rd
    base = float(m.hp("rope.freq_base", 10000.0))
    pos = np.arange(n)
    inv, _ = rope_angles(m, rd, base)
    factor = float(m.hp("rope.scaling.factor", 1.0)) if m.hp("rope.scaling.type") else 1.0
    log_mul = float(m.hp("rope.scaling.yarn_log_multiplier", 0.0)) / 0.1
    mscale = 1.0 + 0.1 * log_mul * math.log(factor)
    kq_scale = mscale * mscale / math.sqrt(k_head)
    n_dense = int(m.hp("leading_dense_block_count", 0))
    k_used = int(m.hp("expert_used_count", 0))
    sigmoid = int(m.hp("expert_gating_func", 1)) == 2
    norm_w = bool(m.hp("expert_weights_norm", False))
    w_scale = float(m.hp("expert_weights_scale", 0.0)) or 1.0
    h = m.weight("token_embd.weight")[tokens]
    for il in range(int(m.hp("block_count"))):
        p = f"blk.{il}."
        x = rms_norm(h, m.weight(p + "attn_norm.weight"), eps)
        if m.has(p + "attn_q_a.weight"):
            cq = rms_norm(x @ m.weight(p + "attn_q_a.weight").T,
                          m.weight(p + "attn_q_a_norm.weight"), eps)
            q = cq @ m.weight(p + "attn_q_b.weight").T
        else:
            q = x @ m.weight(p + "attn_q.weight").T
        q = q.reshape(n, nh, nope + rd)
        kv_a = x @ m.weight(p + "attn_kv_a_mqa.weight").T  # (n, r + rd)
        c = rms_norm(kv_a[:, :r], m.weight(p + "attn_kv_a_norm.weight"), eps)
        k_r = rope(kv_a[:, None, r:], pos, rd, base, False, (inv, 1.0))  # (n, 1, rd)
        q_r = rope(q[:, :, nope:], pos, rd, base, False, (inv, 1.0))
        if mla:
            w_uk = m.weight(p + "attn_k_b.weight").transpose(0, 2, 1)  # (nh, nope, r)
            w_uv = m.weight(p + "attn_v_b.weight")  # (nh, dv, r)
        else:
            kv_b = m.weight(p + "attn_kv_b.weight").reshape(nh, nope + dv, r)
            w_uk, w_uv = kv_b[:, :nope, :], kv_b[:, nope:, :]
        k_nope = np.einsum("tr,hkr->thk", c, w_uk)  # (n, nh, nope)
        v = np.einsum("tr,hvr->thv", c, w_uv)  # (n, nh, dv)
        k = np.concatenate([k_nope, np.repeat(k_r, nh, axis=1)], axis=2)
        qh = np.concatenate([q[:, :, :nope], q_r], axis=2)
        a = attention(qh, k, v, kq_scale).reshape(n, -1)
        h = h + a @ m.weight(p + "attn_output.weight").T
        x = rms_norm(h, m.weight(p + "ffn_norm.weight"), eps)
        if il < n_dense:
            g = silu(x @ m.weight(p + "ffn_gate.weight").T) * (x @ m.weight(p + "ffn_up.weight").T)
            h = h + g @ m.weight(p + "ffn_down.weight").T
            continue
        logits = x @ m.weight(p + "ffn_gate_inp.weight").T
        probs = 1.0 / (1.0 + np.exp(-logits)) if sigmoid else softmax(logits)
        select = probs + (m.weight(p + "exp_probs_b.bias").reshape(-1)
                          if m.has(p + "exp_probs_b.bias") else 0.0)
        n_groups = int(m.hp("expert_group_count", 0))
        if n_groups > 1:  # only the best groups' experts can be chosen
            used = int(m.hp("expert_group_used_count"))
            by_group = select.reshape(n, n_groups, -1)
            score = np.sort(by_group, axis=2)[:, :, -2:].sum(axis=2)  # (n, groups)
            order = np.argsort(-score, axis=1, kind="stable")
            best = order[:, :used]
            if routes is not None:  # how close each token's choice of groups was to a tie
                ranked = np.take_along_axis(score, order, axis=1)
                routes[(il, "group_gap")] = ranked[:, used - 1] - ranked[:, used]
            mask = np.full((n, n_groups), -np.inf)
            np.put_along_axis(mask, best, 0.0, axis=1)
            select = (by_group + mask[:, :, None]).reshape(n, -1)
        if routes is not None:
            routes[il] = select
        gate, up, down = (m.weight(p + f"ffn_{t}_exps.weight") for t in ("gate", "up", "down"))
        out = np.zeros_like(x)
        for t in range(n):
            chosen = np.argsort(-select[t], kind="stable")[:k_used]
            w = probs[t, chosen]
            if norm_w:
                w = w / w.sum()
            for e, we in zip(chosen, w * w_scale):
                out[t] += we * (down[e] @ (silu(gate[e] @ x[t]) * (up[e] @ x[t])))
        g = silu(x @ m.weight(p + "ffn_gate_shexp.weight").T) * (
            x @ m.weight(p + "ffn_up_shexp.weight").T)
        h = h + out + g @ m.weight(p + "ffn_down_shexp.weight").T
    if last_only:
        h = h[-1:]
    h = rms_norm(h, m.weight("output_norm.weight"), eps)
    if hidden_only:
        return h
    return lm_head(m, h)


def forward(m: GgufModel, tokens: list[int], last_only: bool = False,
            routes: dict | None = None, hidden_only: bool = False) -> np.ndarray:
    """Logits, (n_tokens, n_vocab) float64 — or (1, n_vocab) for the last token if last_only.
    routes, when given, receives each mixture layer's router probabilities: {layer: (n, n_expert)}.
    hidden_only: the final norm's output instead, (n_tokens, n_embd): the LM head's input."""
    if m.arch in ("llama", "qwen2", "qwen3", "granite", "phi3", "qwen3moe", "olmoe", "smollm3",
                  "mistral3"):
        return forward_llama(m, tokens, last_only, routes, hidden_only)
    if m.arch in ("gemma3", "gemma2"):
        return forward_gemma3(m, tokens, last_only, hidden_only)
    if m.arch == "olmo2":
        return forward_olmo2(m, tokens, last_only, hidden_only)
    if m.arch == "gpt-oss":
        return forward_gpt_oss(m, tokens, last_only, routes, hidden_only)
    if m.arch == "deepseek2":
        return forward_deepseek2(m, tokens, last_only, routes, hidden_only)
    raise SystemExit(f"reference_forward: unsupported architecture {m.arch}")


if __name__ == "__main__":
    model = GgufModel(sys.argv[1])
    ids = [int(t) for t in sys.argv[2:]]
    out = forward(model, ids, last_only=True)[-1]
    top = np.argsort(-out)[:10]
    print("top-10:", [(int(i), round(float(out[i]), 4)) for i in top])
