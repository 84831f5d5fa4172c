#include "model/arch_llama.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "model/act_view.h"
#include "model/decoder_buffers.h"
#include "model/weight_binder.h"

namespace fluoro {

LlamaArchitecture::LlamaArchitecture(const Hparams& hp, LlamaOptions options)
    : hp_(hp), opt_(options) {}

std::unique_ptr<Architecture> make_llama(const Hparams& hp) {
    LlamaOptions o;
    o.rope_freqs = true;
    return std::make_unique<LlamaArchitecture>(hp, o);
}

void LlamaArchitecture::bind(const WeightBinder& w) {
    w.require_equal_head_dims(hp_);
    const int64_t d = int64_t(hp_.n_embd), nv = int64_t(hp_.n_vocab), hd = int64_t(hp_.head_dim_k);
    token_embd_ = w.required("token_embd.weight", {d, nv});
    output_norm_ = w.required("output_norm.weight", {d});
    output_ = w.optional("output.weight", {d, nv});
    if (!output_.present()) output_ = token_embd_;  // tied LM head (SmolLM2)
    if (opt_.rope_freqs) {
        // llama3 scaling (Llama 3.1+): the angle of rotated pair i is divided by factor i.
        rope_freqs_ = w.optional("rope_freqs.weight", {int64_t(hp_.n_rot / 2)});
        if (rope_freqs_.present() && rope_freqs_.type != GgmlType::F32)
            throw FormatError(w.file_name() + ": tensor 'rope_freqs.weight' is " +
                              std::string(type_name(rope_freqs_.type)) + ", expected F32");
    }
    if (hp_.n_expert > 0)
        moe_ = std::make_unique<MoeFfn>(int64_t(hp_.n_layer), d, int64_t(hp_.n_expert),
                                        int64_t(hp_.n_expert_used),
                                        opt_.moe_ff ? opt_.moe_ff : int64_t(hp_.n_ff[0]),
                                        MoeOptions{.norm_weights = opt_.moe_norm_weights});
    layers_.resize(hp_.n_layer);
    for (int64_t il = 0; il < int64_t(hp_.n_layer); ++il) {
        Layer& L = layers_[size_t(il)];
        const int64_t nq = int64_t(hp_.n_head[size_t(il)]) * hd;
        const int64_t nkv = int64_t(hp_.n_head_kv[size_t(il)]) * hd;
        const int64_t ff = int64_t(hp_.n_ff[size_t(il)]);
        const auto name = [&](const char* s) { return WeightBinder::layer(il, s); };
        L.attn_norm = w.required(name("attn_norm.weight"), {d});
        const std::vector<Weight> qkv =
            opt_.phi3_fused ? w.optional_split(name("attn_qkv.weight"), d, {nq, nkv, nkv})
                            : std::vector<Weight>{};
        if (!qkv.empty()) {
            L.wq = qkv[0], L.wk = qkv[1], L.wv = qkv[2];
        } else {
            L.wq = w.required(name("attn_q.weight"), {d, nq});
            L.wk = w.required(name("attn_k.weight"), {d, nkv});
            L.wv = w.required(name("attn_v.weight"), {d, nkv});
        }
        L.wo = w.required(name("attn_output.weight"), {nq, d});
        if (opt_.qk_norm) {
            L.q_norm = w.required(name("attn_q_norm.weight"), {opt_.qk_norm_whole ? nq : hd});
            L.k_norm = w.required(name("attn_k_norm.weight"), {opt_.qk_norm_whole ? nkv : hd});
        }
        if (opt_.qkv_bias) {
            L.bq = w.required(name("attn_q.bias"), {nq});
            L.bk = w.required(name("attn_k.bias"), {nkv});
            L.bv = w.required(name("attn_v.bias"), {nkv});
        }
        L.ffn_norm = w.required(name("ffn_norm.weight"), {d});
        if (moe_) {
            moe_->bind_layer(w, il);
            continue;
        }
        if (opt_.phi3_fused) {
            const std::vector<Weight> gate_up =
                w.optional_split(name("ffn_up.weight"), d, {ff, ff});
            if (gate_up.empty())
                throw FormatError(w.file_name() + ": required tensor '" + name("ffn_up.weight") +
                                  "' is missing");
            L.gate = gate_up[0], L.up = gate_up[1];
        } else {
            L.gate = w.required(name("ffn_gate.weight"), {d, ff});
            L.up = w.required(name("ffn_up.weight"), {d, ff});
        }
        L.down = w.required(name("ffn_down.weight"), {ff, d});
    }
}

void LlamaArchitecture::reserve(Backend& be, int64_t max_tokens, int64_t max_logit_rows) {
    buf_ = alloc_decoder_buffers(be, hp_, max_tokens, max_logit_rows);
    if (moe_) moe_->reserve(be, max_tokens);
}

void LlamaArchitecture::set_expert_sink(ExpertChoices* sink) {
    if (moe_) moe_->set_sink(sink);
}

KvShape LlamaArchitecture::kv_shape() const {
    return decoder_kv_shape(hp_);
}

bool LlamaArchitecture::layer_has_rope(int64_t il) const {
    return opt_.no_rope_layer_step <= 0 || (il + 1) % opt_.no_rope_layer_step != 0;
}

RopeParams LlamaArchitecture::layer_rope(int64_t il) const {
    RopeParams p =
        decoder_rope(hp_, opt_.rope_mode, rope_freqs_.present() ? &rope_freqs_ : nullptr);
    if (!layer_has_rope(il)) p.n_rot = 0;  // no rotated dims: a cache shift leaves keys as they are
    return p;
}

void LlamaArchitecture::scale_queries_by_position(Backend& be, Act q, const Batch& b) const {
    const double beta = hp_.attn_temp_scale, floor_len = double(hp_.rope_n_ctx_orig);
    for (int64_t i = 0; i < q.rows; ++i) {
        const double s =
            1.0 + beta * std::log1p(std::floor(double(b.positions[size_t(i)]) / floor_len));
        if (s != 1.0) be.scale(Act{q.data + i * q.width, 1, q.width}, float(s));
    }
}

Act LlamaArchitecture::forward(Backend& be, const Batch& b, KvCache& kv) {
    const int64_t n = b.size(), hd = int64_t(hp_.head_dim_k);
    const float eps = float(hp_.rms_eps);
    const RopeParams rope =
        decoder_rope(hp_, opt_.rope_mode, rope_freqs_.present() ? &rope_freqs_ : nullptr);
    const bool temperature = opt_.attn_temperature && hp_.attn_temp_scale > 0;
    Act x = first_rows(buf_.x, n), t = first_rows(buf_.t, n), attn = first_rows(buf_.attn, n);
    Act gate = first_rows(buf_.gate, n), up = first_rows(buf_.up, n);

    be.get_rows(token_embd_, b.tokens, x);  // x: (n, n_embd)
    // Granite: x *= embedding_scale; each block's output *= residual_scale before the residual
    // add; q·k scaled by attention.scale; logits /= logit_scale.
    const bool granite = opt_.granite_scales;
    if (granite && hp_.embedding_scale) be.scale(x, float(*hp_.embedding_scale));
    const float kq_scale =
        granite && hp_.attention_scale ? float(*hp_.attention_scale) : 1.0f / std::sqrt(float(hd));
    // Each residual add is fused with the norm after it (add_rms_norm): this layer's FFN norm,
    // the next layer's attention norm.
    const int64_t n_run = b.layers_to_run(int64_t(layers_.size()));
    if (moe_) moe_->begin_step(n);
    if (n_run > 0) be.rms_norm(x, layers_[0].attn_norm, eps, t);  // t = norm(x)
    for (int64_t il = 0; il < n_run; ++il) {
        const Layer& L = layers_[size_t(il)];
        const int64_t nh = int64_t(hp_.n_head[size_t(il)]),
                      nkv = int64_t(hp_.n_head_kv[size_t(il)]);
        Act q{buf_.q.data, n, nh * hd}, k{buf_.k.data, n, nkv * hd}, v{buf_.v.data, n, nkv * hd};
        attn.width = nh * hd;

        // q: (n, n_head * hd); k, v: (n, n_head_kv * hd)
        const Backend::MatmulOut qkv[] = {{&L.wq, q}, {&L.wk, k}, {&L.wv, v}};
        be.matmul_many(t, qkv, OpCategory::Matmul);
        if (opt_.qkv_bias) {
            be.add_bias(q, L.bq);
            be.add_bias(k, L.bk);
            be.add_bias(v, L.bv);
        }
        if (opt_.qk_norm) {
            be.rms_norm(q, L.q_norm, eps, q);  // per head (groups of hd), before RoPE
            be.rms_norm(k, L.k_norm, eps, k);
        }
        if (layer_has_rope(il)) be.rope_qk(q, nh, k, nkv, hd, rope, b.positions);
        if (temperature) scale_queries_by_position(be, q, b);  // after RoPE, as llama.cpp
        const AttentionParams ap{il, nh, nkv, hd, int64_t(hp_.head_dim_v), kq_scale, 0, 0.0f};
        be.attention(ap, q, k, v, b, kv, attn);  // attn: (n, n_head * hd)
        be.matmul(L.wo, attn, t, OpCategory::Matmul);
        if (granite && hp_.residual_scale) be.scale(t, float(*hp_.residual_scale));
        be.add_rms_norm(x, t, L.ffn_norm, eps, t);  // residual; t = norm(x)
        if (moe_) {
            moe_->forward(be, il, t, x);  // x += the experts' weighted outputs
            if (il + 1 < n_run) be.rms_norm(x, layers_[size_t(il + 1)].attn_norm, eps, t);
            continue;
        }
        const Backend::MatmulOut gate_up[] = {{&L.gate, gate}, {&L.up, up}};  // (n, n_ff)
        be.matmul_many(t, gate_up, OpCategory::Ffn);
        be.swiglu(gate, up);  // gate = silu(gate) * up
        be.matmul(L.down, gate, t, OpCategory::Ffn);
        if (granite && hp_.residual_scale) be.scale(t, float(*hp_.residual_scale));
        if (il + 1 < n_run)
            be.add_rms_norm(x, t, layers_[size_t(il + 1)].attn_norm, eps, t);
        else
            be.add(x, t);
    }
    Act logits = decoder_logits(be, buf_, b, x, output_norm_, eps, output_);
    if (granite && hp_.logit_scale) be.scale(logits, 1.0f / float(*hp_.logit_scale));
    return logits;
}

}  // namespace fluoro
