#include "model/arch_gemma3.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "model/act_view.h"
#include "model/decoder_buffers.h"
#include "model/weight_binder.h"

namespace fluoro {

void Gemma3Architecture::bind(const WeightBinder& w) {
    w.require_equal_head_dims(hp_);
    const int64_t d = int64_t(hp_.n_embd), nv = int64_t(hp_.n_vocab), hd = int64_t(hp_.head_dim_k);
    token_embd_ = w.required("token_embd.weight", {d, nv});
    output_norm_ = w.required("output_norm.weight", {d});
    // Gemma 2's head is always the embedding (llama.cpp never reads an output.weight there).
    if (!gemma2_) output_ = w.optional("output.weight", {d, nv});
    if (!output_.present()) output_ = token_embd_;
    layers_.resize(hp_.n_layer);
    for (int64_t il = 0; il < int64_t(hp_.n_layer); ++il) {
        Layer& L = layers_[size_t(il)];
        const int64_t nq = int64_t(hp_.n_head[size_t(il)]) * hd;
        const int64_t nkv = int64_t(hp_.n_head_kv[size_t(il)]) * hd;
        const int64_t ff = int64_t(hp_.n_ff[size_t(il)]);
        const auto name = [&](const char* s) { return WeightBinder::layer(il, s); };
        L.attn_norm = w.required(name("attn_norm.weight"), {d});
        L.wq = w.required(name("attn_q.weight"), {d, nq});
        L.wk = w.required(name("attn_k.weight"), {d, nkv});
        L.wv = w.required(name("attn_v.weight"), {d, nkv});
        L.wo = w.required(name("attn_output.weight"), {nq, d});
        if (!gemma2_) {
            L.q_norm = w.required(name("attn_q_norm.weight"), {hd});
            L.k_norm = w.required(name("attn_k_norm.weight"), {hd});
        }
        L.post_attn_norm = w.required(name("post_attention_norm.weight"), {d});
        L.ffn_norm = w.required(name("ffn_norm.weight"), {d});
        L.gate = w.required(name("ffn_gate.weight"), {d, ff});
        L.up = w.required(name("ffn_up.weight"), {d, ff});
        L.down = w.required(name("ffn_down.weight"), {ff, d});
        L.post_ffn_norm = w.required(name("post_ffw_norm.weight"), {d});
    }
}

void Gemma3Architecture::reserve(Backend& be, int64_t max_tokens, int64_t max_logit_rows) {
    buf_ = alloc_decoder_buffers(be, hp_, max_tokens, max_logit_rows);
}

KvShape Gemma3Architecture::kv_shape() const {
    return decoder_kv_shape(hp_);
}

RopeParams Gemma3Architecture::layer_rope(int64_t il) const {
    const bool global = is_global_layer(il);
    if (global) return decoder_rope(hp_, RopeMode::Neox);
    if (gemma2_) {  // Gemma 2's local layers: the global RoPE (scaling included), at base_swa
        RopeParams local = decoder_rope(hp_, RopeMode::Neox);
        local.freq_base = hp_.rope_freq_base_swa.value_or(hp_.rope_freq_base);
        return local;
    }
    RopeParams local;  // unscaled, at the local base (rope.freq_base_swa, by default 10000)
    local.n_rot = int64_t(hp_.n_rot);
    local.freq_base = hp_.rope_freq_base_swa.value_or(kLocalRopeBase);
    local.mode = RopeMode::Neox;
    return local;
}

Act Gemma3Architecture::forward(Backend& be, const Batch& b, KvCache& kv) {
    const int64_t n = b.size(), hd = int64_t(hp_.head_dim_k);
    const float eps = float(hp_.rms_eps);
    Act x = first_rows(buf_.x, n), t = first_rows(buf_.t, n), attn = first_rows(buf_.attn, n);
    Act gate = first_rows(buf_.gate, n), up = first_rows(buf_.up, n);

    be.get_rows(token_embd_, b.tokens, x);      // x: (n, n_embd)
    be.scale(x, std::sqrt(float(hp_.n_embd)));  // Gemma scales embeddings by √d
    // Gemma 2: soft-capping on unless its keys say otherwise; the 27B's query scale.
    const float attn_cap =
        float(hp_.attn_logit_softcap.value_or(gemma2_ ? kGemma2AttnSoftcap : 0.0));
    const std::optional<double> final_cap =
        gemma2_ ? hp_.final_logit_softcap.value_or(kGemma2FinalSoftcap) : hp_.final_logit_softcap;
    const bool gemma2_27b = gemma2_ && hp_.n_layer == 46;
    const float kq_scale = 1.0f / std::sqrt(float(gemma2_27b ? hp_.n_embd / hp_.n_head[0] : hd));
    // Each residual add is fused with the norm after it (add_rms_norm): this layer's FFN norm,
    // the next layer's attention norm.
    const int64_t n_run = b.layers_to_run(int64_t(layers_.size()));
    if (n_run > 0) be.rms_norm(x, layers_[0].attn_norm, eps, t);
    for (int64_t il = 0; il < n_run; ++il) {
        const Layer& L = layers_[size_t(il)];
        const int64_t nh = int64_t(hp_.n_head[size_t(il)]),
                      nkv = int64_t(hp_.n_head_kv[size_t(il)]);
        Act q{buf_.q.data, n, nh * hd}, k{buf_.k.data, n, nkv * hd}, v{buf_.v.data, n, nkv * hd};
        attn.width = nh * hd;
        const RopeParams rope = layer_rope(il);

        // q: (n, n_head * hd); k, v: (n, n_head_kv * hd)
        const Backend::MatmulOut qkv[] = {{&L.wq, q}, {&L.wk, k}, {&L.wv, v}};
        be.matmul_many(t, qkv, OpCategory::Matmul);
        if (!gemma2_) {
            be.rms_norm(q, L.q_norm, eps, q);  // per-head norms, before RoPE
            be.rms_norm(k, L.k_norm, eps, k);
        }
        be.rope_qk(q, nh, k, nkv, hd, rope, b.positions);
        const AttentionParams ap{
            il, nh, nkv, hd, int64_t(hp_.head_dim_v), kq_scale, layer_window(il), attn_cap};
        be.attention(ap, q, k, v, b, kv, attn);
        be.matmul(L.wo, attn, t, OpCategory::Matmul);
        be.rms_norm(t, L.post_attn_norm, eps, t);
        be.add_rms_norm(x, t, L.ffn_norm, eps, t);
        const Backend::MatmulOut gate_up[] = {{&L.gate, gate}, {&L.up, up}};
        be.matmul_many(t, gate_up, OpCategory::Ffn);
        be.geglu_tanh(gate, up);  // gate = gelu_tanh(gate) * up
        be.matmul(L.down, gate, t, OpCategory::Ffn);
        be.rms_norm(t, L.post_ffn_norm, eps, t);
        if (il + 1 < n_run)
            be.add_rms_norm(x, t, layers_[size_t(il + 1)].attn_norm, eps, t);
        else
            be.add(x, t);
    }
    Act logits = decoder_logits(be, buf_, b, x, output_norm_, eps, output_);
    if (final_cap) be.softcap(logits, float(*final_cap));
    return logits;
}

}  // namespace fluoro

namespace fluoro {

std::unique_ptr<Architecture> make_gemma3(const Hparams& hp) {
    return std::make_unique<Gemma3Architecture>(hp);
}

std::unique_ptr<Architecture> make_gemma2(const Hparams& hp) {
    return std::make_unique<Gemma3Architecture>(hp, true);
}

}  // namespace fluoro
