#include "model/arch_olmo2.h"

#include <cmath>

#include "model/act_view.h"
#include "model/weight_binder.h"

namespace fluoro {

std::unique_ptr<Architecture> make_olmo2(const Hparams& hp) {
    return std::make_unique<Olmo2Architecture>(hp);
}

void Olmo2Architecture::bind(const WeightBinder& w) {
    w.require_equal_head_dims(hp_);
    const int64_t d = int64_t(hp_.n_embd), nv = int64_t(hp_.n_vocab), hd = int64_t(hp_.head_dim_k);
    token_embd_ = w.required("token_embd.weight", {d, nv});
    output_norm_ = w.required("output_norm.weight", {d});
    output_ = w.required("output.weight", {d, nv});
    layers_.resize(hp_.n_layer);
    for (int64_t il = 0; il < int64_t(hp_.n_layer); ++il) {
        Layer& L = layers_[size_t(il)];
        const int64_t nq = int64_t(hp_.n_head[size_t(il)]) * hd;
        const int64_t nkv = int64_t(hp_.n_head_kv[size_t(il)]) * hd;
        const int64_t ff = int64_t(hp_.n_ff[size_t(il)]);
        const auto name = [&](const char* s) { return WeightBinder::layer(il, s); };
        L.wq = w.required(name("attn_q.weight"), {d, nq});
        L.wk = w.required(name("attn_k.weight"), {d, nkv});
        L.wv = w.required(name("attn_v.weight"), {d, nkv});
        L.wo = w.required(name("attn_output.weight"), {nq, d});
        L.q_norm = w.required(name("attn_q_norm.weight"), {nq});  // whole projection
        L.k_norm = w.required(name("attn_k_norm.weight"), {nkv});
        L.post_attn_norm = w.required(name("post_attention_norm.weight"), {d});
        L.gate = w.required(name("ffn_gate.weight"), {d, ff});
        L.up = w.required(name("ffn_up.weight"), {d, ff});
        L.down = w.required(name("ffn_down.weight"), {ff, d});
        L.post_ffn_norm = w.required(name("post_ffw_norm.weight"), {d});
    }
}

void Olmo2Architecture::reserve(Backend& be, int64_t max_tokens, int64_t max_logit_rows) {
    buf_ = alloc_decoder_buffers(be, hp_, max_tokens, max_logit_rows);
}

KvShape Olmo2Architecture::kv_shape() const {
    return decoder_kv_shape(hp_);
}

RopeParams Olmo2Architecture::layer_rope(int64_t) const {
    return decoder_rope(hp_, RopeMode::Neox);
}

Act Olmo2Architecture::forward(Backend& be, const Batch& b, KvCache& kv) {
    const int64_t n = b.size(), hd = int64_t(hp_.head_dim_k);
    const float eps = float(hp_.rms_eps);
    const RopeParams rope = layer_rope(0);
    Act x = first_rows(buf_.x, n), t = first_rows(buf_.t, n), attn = first_rows(buf_.attn, n);
    Act gate = first_rows(buf_.gate, n), up = first_rows(buf_.up, n);

    be.get_rows(token_embd_, b.tokens, x);  // x: (n, n_embd)
    const int64_t n_run = b.layers_to_run(int64_t(layers_.size()));
    for (int64_t il = 0; il < n_run; ++il) {
        const Layer& L = layers_[size_t(il)];
        const int64_t nh = int64_t(hp_.n_head[size_t(il)]),
                      nkv = int64_t(hp_.n_head_kv[size_t(il)]);
        Act q{buf_.q.data, n, nh * hd}, k{buf_.k.data, n, nkv * hd}, v{buf_.v.data, n, nkv * hd};
        attn.width = nh * hd;

        // q: (n, n_head * hd); k, v: (n, n_head_kv * hd) — from x itself (no pre-norm)
        const Backend::MatmulOut qkv[] = {{&L.wq, q}, {&L.wk, k}, {&L.wv, v}};
        be.matmul_many(x, qkv, OpCategory::Matmul);
        be.rms_norm(q, L.q_norm, eps, q);  // over the whole row, before RoPE
        be.rms_norm(k, L.k_norm, eps, k);
        be.rope_qk(q, nh, k, nkv, hd, rope, b.positions);
        const AttentionParams ap{
            il, nh, nkv, hd, int64_t(hp_.head_dim_v), 1.0f / std::sqrt(float(hd)), 0, 0.0f};
        be.attention(ap, q, k, v, b, kv, attn);  // attn: (n, n_head * hd)
        be.matmul(L.wo, attn, t, OpCategory::Matmul);
        be.rms_norm(t, L.post_attn_norm, eps, t);  // post-norm, then the residual
        be.add(x, t);
        const Backend::MatmulOut gate_up[] = {{&L.gate, gate}, {&L.up, up}};  // (n, n_ff)
        be.matmul_many(x, gate_up, OpCategory::Ffn);
        be.swiglu(gate, up);  // gate = silu(gate) * up
        be.matmul(L.down, gate, t, OpCategory::Ffn);
        be.rms_norm(t, L.post_ffn_norm, eps, t);
        be.add(x, t);
    }
    return decoder_logits(be, buf_, b, x, output_norm_, eps, output_);
}

}  // namespace fluoro
