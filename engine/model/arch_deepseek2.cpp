// deepseek2 (DeepSeek-V2, V2-Lite, V2.5, V3, R1, Kimi K2 and the files converted to it): multi-head
// latent attention (MLA, DeepSeek-V2 §2.1) and the DeepSeekMoE feed-forward, as llama.cpp runs
// them (src/models/deepseek2.cpp). Per layer, with x the normed input:
//
//   c   = RMSNorm(x W_DKV)            the latent, kv_lora_rank wide: all a token's keys and values
//   k_R = RoPE(x W_KR)                one RoPE key of rope dims, shared by every head
//   q   = x W_Q, or RMSNorm(x W_DQ) W_UQ when the file compresses Q too (q_lora_rank > 0)
//   per head h: q_h = [q_nope_h, RoPE(q_R_h)], k_h = [c W_UK_h, k_R], v_h = c W_UV_h
//   o   = concat_h softmax(q_h k_hᵀ · scale) v_h,  out = o W_O
//
// Two ways to compute it (MlaPath, ModelLoadOptions::mla), equal up to float rounding:
//  * naive: every head's k_h and v_h are up-projected and cached — ordinary attention with
//    n_head KV heads of nope + rope key dims and v_head_dim value dims;
//  * absorbed (the default; DeepSeek-V2's "absorb W_UK into W_UQ"): q_nope_h·(c W_UK_h) =
//    (q_nope_h W_UK_hᵀ)·c, so each head's query is taken into the latent space and every head
//    attends to the one cached row [k_R, c] — multi-query attention with one KV head of
//    rope + kv_lora_rank key dims whose values are the latent c; each head's output (a latent)
//    is then taken back through W_UV_h. What is cached per token and layer is the key row
//    rope + kv_lora_rank, the paper's count: the values are read from its latent dims
//    (KvShape::v_in_k) where the cache's key type can serve as the value type (the same type;
//    a separate value type stores the latent a second time, as does the CUDA backend for now).
// fluoro's MLA variant (files written by model/mla_convert.h from a GQA model) may leave out the
// latent norm (attn_kv_a_norm: the latent is then used as projected) and carry per-pair RoPE
// frequency factors (rope_freqs.weight); llama.cpp accepts neither.
// Keys and queries hold their RoPE dims first ([k_R, ...]) so that the cache's re-rotation of
// the first n_rot dims (Model::compact_kv) turns exactly those.
//
// The GGUF comes in two forms: today's converter splits W_UK / W_UV per head (attn_k_b, holding
// W_UK_hᵀ, and attn_v_b; key_length = kv_lora_rank + rope, key_length_mla = the head's key
// size), older files hold both in attn_kv_b (each head's no-RoPE key rows, then its value rows;
// key_length = the head's key size). The path a form does not hold directly gets its matrices
// transposed once at load into float32 (derived_).
//
// Scale: mscale² / sqrt(nope + rope), with YaRN's mscale = 0.1 L ln(s) + 1 for the file's
// rope.scaling.yarn_log_multiplier / 0.1 = L (DeepSeek's converter writes 0.1 x mscale_all_dim);
// the rotations themselves then keep magnitude rope.scaling.attn_factor (HF's mscale equals
// mscale_all_dim: their ratio is 1).
//
// FFN: leading_dense_block_count dense SwiGLU layers, then in every later layer the routed
// experts (moe_ffn.h with deepseek2's RouteRule: softmax or sigmoid gating, exp_probs_b, groups,
// weights renormalised when expert_weights_norm, times expert_weights_scale) plus
// expert_shared_count shared experts run as one SwiGLU FFN over every token.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "model/act_view.h"
#include "model/architecture.h"
#include "model/decoder_buffers.h"
#include "model/moe_ffn.h"
#include "model/weight_binder.h"
#include "tensor/ggml_type.h"

namespace fluoro {
namespace {

class Deepseek2Architecture final : public Architecture {
  public:
    explicit Deepseek2Architecture(const Hparams& hp);
    void set_mla_path(MlaPath path) override { path_ = path; }
    void bind(const WeightBinder& w) override;
    void reserve(Backend& backend, int64_t max_tokens, int64_t max_logit_rows) override;
    Act forward(Backend& backend, const Batch& batch, KvCache& kv) override;
    KvShape kv_shape() const override;
    RopeParams layer_rope(int64_t il) const override;
    void set_expert_sink(ExpertChoices* sink) override {
        if (moe_) moe_->set_sink(sink);
    }

  private:
    struct Layer {
        Weight attn_norm, wq, wq_a, q_a_norm, wkv_a, kv_a_norm, wo;
        Weight kv_up;                        // naive: latent -> per head [k_nope (nope), v (dv)]
        std::vector<Weight> k_absorb, v_up;  // absorbed, per head: nope -> latent, latent -> dv
        Weight ffn_norm, gate, up, down;     // dense layers: n_ff wide; others: shared experts
    };
    bool absorbed() const { return path_ == MlaPath::Absorbed; }
    bool moe_layer(int64_t il) const { return il >= dense_; }
    // The per-head matrices of a layer for the chosen path, from whichever form the file holds.
    void bind_latent_up(const WeightBinder& w, int64_t il, Layer& L,
                        gguf::GgufWriter& derived) const;
    // y's block h = x's block h · ws[h]ᵀ for each head h (blocks of ws[h].n_in() in x, of
    // ws[h].n_out() in y, at offsets x_at / y_at within strides x_stride / y_stride).
    void per_head_matmul(Backend& be, const std::vector<Weight>& ws, const Act& x, int64_t x_stride,
                         int64_t x_at, Act y, int64_t y_stride, int64_t y_at) const;

    Hparams hp_;
    MlaPath path_ = MlaPath::Absorbed;
    int64_t d_, nh_, nope_, rd_, dv_, r_, qr_, dense_, ff_sh_ = 0;
    float kq_scale_ = 1;
    RopeParams rope_;
    Weight token_embd_, output_norm_, output_, rope_freqs_;
    std::vector<Layer> layers_;
    std::unique_ptr<MoeFfn> moe_;
    std::unique_ptr<gguf::GgufFile> derived_;  // transposed per-head matrices (see above)
    struct Buffers {
        Act x, t, cq, qraw, kva, lat, q, k, v, kvu, attn, hin, hout, o, gate, up, logits;
    } buf_;
};

Deepseek2Architecture::Deepseek2Architecture(const Hparams& hp) : hp_(hp) {
    const auto fail = [&](const std::string& key, const std::string& what) {
        throw FormatError("metadata key 'deepseek2." + key + "' " + what);
    };
    d_ = int64_t(hp.n_embd);
    nh_ = int64_t(hp.n_head[0]);
    for (uint64_t h : hp.n_head)
        if (int64_t(h) != nh_) fail("attention.head_count", "differs between layers");
    r_ = int64_t(hp.kv_lora_rank);
    if (r_ == 0) fail("attention.kv_lora_rank", "is missing or 0: deepseek2 attends to a latent");
    qr_ = int64_t(hp.q_lora_rank);
    rd_ = int64_t(hp.n_rot);
    const bool mla_form = hp.head_dim_k_mla != 0;
    const int64_t k_head = int64_t(mla_form ? hp.head_dim_k_mla : hp.head_dim_k);
    dv_ = int64_t(mla_form ? hp.head_dim_v_mla : hp.head_dim_v);
    if (mla_form && (int64_t(hp.head_dim_k) != r_ + rd_ || int64_t(hp.head_dim_v) != r_))
        fail("attention.key_length", "(" + std::to_string(hp.head_dim_k) + ") and value_length (" +
                                         std::to_string(hp.head_dim_v) +
                                         ") must be kv_lora_rank + rope dims (" +
                                         std::to_string(r_ + rd_) + ") and kv_lora_rank (" +
                                         std::to_string(r_) + ") in a file with key_length_mla");
    nope_ = k_head - rd_;
    if (rd_ < 2 || nope_ < 1)
        fail("rope.dimension_count", "(" + std::to_string(rd_) +
                                         ") must be at least 2 and below the key head size (" +
                                         std::to_string(k_head) + ")");
    dense_ = std::min<int64_t>(int64_t(hp.n_layer_dense_lead), int64_t(hp.n_layer));
    if (dense_ < int64_t(hp.n_layer)) {
        if (hp.n_expert == 0)
            fail("expert_count", "is missing or 0 while layers " + std::to_string(dense_) +
                                     ".. are mixture-of-experts layers");
        if (hp.n_ff_exp == 0) fail("expert_feed_forward_length", "is missing");
        ff_sh_ = int64_t(hp.n_ff_exp * hp.n_expert_shared);
        MoeOptions o;
        o.norm_weights = hp.expert_weights_norm;
        o.gating =
            hp.expert_gating_func == 2 ? RouteRule::Gating::Sigmoid : RouteRule::Gating::Softmax;
        o.selection_bias = true;  // exp_probs_b.bias where the file has it (DeepSeek-V3)
        o.weights_scale = hp.expert_weights_scale > 0 ? float(hp.expert_weights_scale) : 1.0f;
        o.n_groups = int64_t(hp.n_expert_groups);
        o.n_groups_used = int64_t(hp.n_group_used);
        moe_ = std::make_unique<MoeFfn>(int64_t(hp.n_layer), d_, int64_t(hp.n_expert),
                                        int64_t(hp.n_expert_used), int64_t(hp.n_ff_exp), o);
    }
    // RoPE on the rope dims, NORM (adjacent pairs). The rotations' magnitude: with a log
    // multiplier, llama.cpp takes DeepSeek's mscale = mscale_all_dim, whose ratio is 1, i.e.
    // decoder_rope's rule for a multiplier of 1.
    Hparams rope_hp = hp;
    if (hp.yarn_log_mul != 0) rope_hp.yarn_log_mul = 1.0;
    rope_ = decoder_rope(rope_hp, RopeMode::Norm);
    // q·k scale: the magnitude llama.cpp's context gives the rotations, times 1 + 0.1 ln s
    // (cancelling the kernel's YaRN factor), times DeepSeek's 0.1 L ln s + 1, squared.
    const double ln_s = hp.rope_freq_scale < 1 ? std::log(1.0 / hp.rope_freq_scale) : 0.0;
    const double mscale = double(rope_.attn_factor) * (1.0 + 0.1 * ln_s) *
                          (1.0 + 0.1 * (hp.yarn_log_mul / 0.1) * ln_s);
    kq_scale_ = float(mscale * mscale / std::sqrt(double(k_head)));
}

void Deepseek2Architecture::bind_latent_up(const WeightBinder& w, int64_t il, Layer& L,
                                           gguf::GgufWriter& derived) const {
    const auto name = [&](const char* s) { return WeightBinder::layer(il, s); };
    const std::string tag = "blk." + std::to_string(il) + ".";
    if (hp_.head_dim_k_mla != 0) {  // attn_k_b: per head W_UK_hᵀ (nope -> latent); attn_v_b
        L.v_up = w.required_experts(name("attn_v_b.weight"), r_, dv_, nh_, "head");
        if (absorbed()) {
            L.k_absorb = w.required_experts(name("attn_k_b.weight"), nope_, r_, nh_, "head");
            return;
        }
        // Naive: the legacy layout, latent -> per head [k_nope, v], transposing W_UK_hᵀ back.
        const std::vector<float> kb = w.host_values(name("attn_k_b.weight"), {nope_, r_, nh_});
        const std::vector<float> vb = w.host_values(name("attn_v_b.weight"), {r_, dv_, nh_});
        std::vector<float> kv(size_t(nh_ * (nope_ + dv_) * r_));
        for (int64_t h = 0; h < nh_; ++h) {
            float* head = kv.data() + h * (nope_ + dv_) * r_;
            for (int64_t j = 0; j < nope_; ++j)
                for (int64_t i = 0; i < r_; ++i)
                    head[j * r_ + i] = kb[size_t((h * r_ + i) * nope_ + j)];
            std::copy_n(vb.begin() + h * dv_ * r_, dv_ * r_, head + nope_ * r_);
        }
        derived.add_tensor_f32(tag + "kv_up", {uint64_t(r_), uint64_t(nh_ * (nope_ + dv_))}, kv);
        L.v_up.clear();  // the naive path takes the values from kv_up
        return;
    }
    // attn_kv_b: per head nope key rows, then dv value rows, each kv_lora_rank long.
    if (!absorbed()) {
        L.kv_up = w.required(name("attn_kv_b.weight"), {r_, nh_ * (nope_ + dv_)});
        return;
    }
    std::vector<int64_t> parts;
    for (int64_t h = 0; h < nh_; ++h) parts.insert(parts.end(), {nope_, dv_});
    const std::vector<Weight> split = w.optional_split(name("attn_kv_b.weight"), r_, parts);
    if (split.empty())
        throw FormatError(w.file_name() + ": required tensor '" + name("attn_kv_b.weight") +
                          "' (or attn_k_b and attn_v_b) is missing");
    for (int64_t h = 0; h < nh_; ++h) L.v_up.push_back(split[size_t(2 * h + 1)]);
    const std::vector<float> kvb =
        w.host_values(name("attn_kv_b.weight"), {r_, nh_ * (nope_ + dv_)});
    std::vector<float> kb(size_t(nh_ * r_ * nope_));  // per head W_UK_hᵀ: r rows of nope
    for (int64_t h = 0; h < nh_; ++h)
        for (int64_t i = 0; i < r_; ++i)
            for (int64_t j = 0; j < nope_; ++j)
                kb[size_t((h * r_ + i) * nope_ + j)] =
                    kvb[size_t((h * (nope_ + dv_) + j) * r_ + i)];
    derived.add_tensor_f32(tag + "k_absorb", {uint64_t(nope_), uint64_t(r_), uint64_t(nh_)}, kb);
}

void Deepseek2Architecture::bind(const WeightBinder& w) {
    const int64_t nv = int64_t(hp_.n_vocab), kh = nope_ + rd_;
    token_embd_ = w.required("token_embd.weight", {d_, nv});
    output_norm_ = w.required("output_norm.weight", {d_});
    output_ = w.optional("output.weight", {d_, nv});
    if (!output_.present()) output_ = token_embd_;
    // Per-pair frequency factors (llama 3's form): DeepSeek's files have none; fluoro's MLA
    // variant (model/mla_convert.h) keeps each converted pair's original frequency with them.
    rope_freqs_ = w.optional("rope_freqs.weight", {rd_ / 2});
    if (rope_freqs_.present()) {
        if (rope_freqs_.type != GgmlType::F32)
            throw FormatError(w.file_name() + ": tensor 'rope_freqs.weight' is " +
                              std::string(type_name(rope_freqs_.type)) + ", expected F32");
        rope_.freq_factors = &rope_freqs_;
    }
    gguf::GgufWriter derived;
    layers_.resize(hp_.n_layer);
    for (int64_t il = 0; il < int64_t(hp_.n_layer); ++il) {
        Layer& L = layers_[size_t(il)];
        const auto name = [&](const char* s) { return WeightBinder::layer(il, s); };
        L.attn_norm = w.required(name("attn_norm.weight"), {d_});
        if (qr_ > 0) {
            L.wq_a = w.required(name("attn_q_a.weight"), {d_, qr_});
            L.q_a_norm = w.required(name("attn_q_a_norm.weight"), {qr_});
            L.wq = w.required(name("attn_q_b.weight"), {qr_, nh_ * kh});
        } else {
            L.wq = w.required(name("attn_q.weight"), {d_, nh_ * kh});
        }
        L.wkv_a = w.required(name("attn_kv_a_mqa.weight"), {d_, r_ + rd_});
        // fluoro's MLA variant (model/mla_convert.h) has no latent norm: the latent is used as
        // projected.
        L.kv_a_norm = w.optional(name("attn_kv_a_norm.weight"), {r_});
        bind_latent_up(w, il, L, derived);
        L.wo = w.required(name("attn_output.weight"), {nh_ * dv_, d_});
        L.ffn_norm = w.required(name("ffn_norm.weight"), {d_});
        if (!moe_layer(il)) {
            const int64_t ff = int64_t(hp_.n_ff[size_t(il)]);
            L.gate = w.required(name("ffn_gate.weight"), {d_, ff});
            L.up = w.required(name("ffn_up.weight"), {d_, ff});
            L.down = w.required(name("ffn_down.weight"), {ff, d_});
            continue;
        }
        moe_->bind_layer(w, il);
        if (ff_sh_ > 0) {
            L.gate = w.required(name("ffn_gate_shexp.weight"), {d_, ff_sh_});
            L.up = w.required(name("ffn_up_shexp.weight"), {d_, ff_sh_});
            L.down = w.required(name("ffn_down_shexp.weight"), {ff_sh_, d_});
        }
    }
    if (derived.tensor_count() == 0) return;
    derived_ = std::make_unique<gguf::GgufFile>(
        gguf::GgufFile::parse(derived.to_bytes(), w.file_name() + " (transposed at load)"));
    for (int64_t il = 0; il < int64_t(hp_.n_layer); ++il) {
        Layer& L = layers_[size_t(il)];
        const std::string tag = "blk." + std::to_string(il) + ".";
        if (derived_->find_tensor(tag + "kv_up"))
            L.kv_up = w.load_derived(*derived_, tag + "kv_up");
        if (derived_->find_tensor(tag + "k_absorb"))  // {nope, r, n_head}: one matrix per head
            L.k_absorb = w.load_derived_stacked(*derived_, tag + "k_absorb", r_, nh_, "head");
    }
}

void Deepseek2Architecture::reserve(Backend& be, int64_t n, int64_t max_logit_rows) {
    const int64_t kq = rd_ + (absorbed() ? r_ : nope_);  // a head's key size as attended
    int64_t ff = ff_sh_;
    for (int64_t il = 0; il < dense_; ++il) ff = std::max(ff, int64_t(hp_.n_ff[size_t(il)]));
    buf_.x = be.alloc_act(n, d_);
    buf_.t = be.alloc_act(n, d_);
    if (qr_ > 0) buf_.cq = be.alloc_act(n, qr_);
    buf_.qraw = be.alloc_act(n, nh_ * (nope_ + rd_));
    buf_.kva = be.alloc_act(n, r_ + rd_);
    buf_.lat = be.alloc_act(n, r_);
    buf_.q = be.alloc_act(n, nh_ * kq);
    if (absorbed()) {
        buf_.k = be.alloc_act(n, kq);
        buf_.attn = be.alloc_act(n, nh_ * r_);
        buf_.hin = be.alloc_act(n, std::max(nope_, r_));
        buf_.hout = be.alloc_act(n, std::max(r_, dv_));
    } else {
        buf_.k = be.alloc_act(n, nh_ * kq);
        buf_.v = be.alloc_act(n, nh_ * dv_);
        buf_.kvu = be.alloc_act(n, nh_ * (nope_ + dv_));
    }
    buf_.o = be.alloc_act(n, nh_ * dv_);
    if (ff > 0) {
        buf_.gate = be.alloc_act(n, ff);
        buf_.up = be.alloc_act(n, ff);
    }
    buf_.logits = be.alloc_act(max_logit_rows, int64_t(hp_.n_vocab));
    be.reserve(n, std::max({d_, nh_ * kq, nh_ * (nope_ + dv_), ff, r_ + rd_}));
    if (moe_) moe_->reserve(be, n);
}

KvShape Deepseek2Architecture::kv_shape() const {
    KvShape s;
    s.n_layer = int64_t(hp_.n_layer);
    s.n_head_kv.assign(size_t(s.n_layer), absorbed() ? 1 : nh_);
    s.head_dim_k = rd_ + (absorbed() ? r_ : nope_);
    s.head_dim_v = absorbed() ? r_ : dv_;
    if (absorbed()) s.v_in_k = rd_;  // the values are the keys' latent: [k_R, c]
    return s;
}

RopeParams Deepseek2Architecture::layer_rope(int64_t) const {
    return rope_;
}

void Deepseek2Architecture::per_head_matmul(Backend& be, const std::vector<Weight>& ws,
                                            const Act& x, int64_t x_stride, int64_t x_at, Act y,
                                            int64_t y_stride, int64_t y_at) const {
    for (int64_t h = 0; h < nh_; ++h) {
        const Weight& w = ws[size_t(h)];
        if (x.rows == 1) {  // one row: the head's blocks are contiguous Acts already
            be.matmul(w, Act{x.data + h * x_stride + x_at, 1, w.n_in()},
                      Act{y.data + h * y_stride + y_at, 1, w.n_out()}, OpCategory::Attention);
            continue;
        }
        const Act in = first_rows(Act{buf_.hin.data, buf_.hin.rows, w.n_in()}, x.rows);
        const Act out = first_rows(Act{buf_.hout.data, buf_.hout.rows, w.n_out()}, x.rows);
        be.copy_blocks(x, in, BlockCopy{w.n_in(), 1, h * x_stride + x_at, 0, 0, 0});
        be.matmul(w, in, out, OpCategory::Attention);
        be.copy_blocks(out, y, BlockCopy{w.n_out(), 1, 0, 0, h * y_stride + y_at, 0});
    }
}

Act Deepseek2Architecture::forward(Backend& be, const Batch& b, KvCache& kv) {
    const int64_t n = b.size(), kh = nope_ + rd_, kq = rd_ + (absorbed() ? r_ : nope_);
    const float eps = float(hp_.rms_eps);
    const Act x = first_rows(buf_.x, n), t = first_rows(buf_.t, n);
    const Act qraw = first_rows(buf_.qraw, n), kva = first_rows(buf_.kva, n);
    const Act q = first_rows(buf_.q, n), k = first_rows(buf_.k, n), o = first_rows(buf_.o, n);
    be.get_rows(token_embd_, b.tokens, x);
    const int64_t n_run = b.layers_to_run(int64_t(layers_.size()));
    if (moe_) moe_->begin_step(n);
    if (n_run > 0) be.rms_norm(x, layers_[0].attn_norm, eps, t);
    for (int64_t il = 0; il < n_run; ++il) {
        const Layer& L = layers_[size_t(il)];
        // q: per head [nope, rope]; kva: [latent (r), k_R (rope)].
        if (qr_ > 0) {
            const Act cq = first_rows(buf_.cq, n);
            const Backend::MatmulOut a[] = {{&L.wq_a, cq}, {&L.wkv_a, kva}};
            be.matmul_many(t, a, OpCategory::Matmul);
            be.rms_norm(cq, L.q_a_norm, eps, cq);
            be.matmul(L.wq, cq, qraw, OpCategory::Matmul);
        } else {
            const Backend::MatmulOut a[] = {{&L.wq, qraw}, {&L.wkv_a, kva}};
            be.matmul_many(t, a, OpCategory::Matmul);
        }
        // The latent c, normed, contiguous: the values of the absorbed path as they are.
        const Act lat = first_rows(buf_.lat, n);
        be.copy_blocks(kva, lat, BlockCopy{r_, 1, 0, 0, 0, 0});
        if (L.kv_a_norm.present()) be.rms_norm(lat, L.kv_a_norm, eps, lat);
        // Queries and keys as attended, RoPE dims first: q_h = [q_R_h, ...], k_h = [k_R, ...].
        be.copy_blocks(qraw, q, BlockCopy{rd_, nh_, nope_, kh, 0, kq});
        if (absorbed()) {
            be.copy_blocks(kva, k, BlockCopy{rd_, 1, r_, 0, 0, 0});
            be.copy_blocks(lat, k, BlockCopy{r_, 1, 0, 0, rd_, 0});
            per_head_matmul(be, L.k_absorb, qraw, kh, 0, q, kq, rd_);  // q_nope_h W_UK_hᵀ
            be.rope_qk(q, nh_, k, 1, kq, rope_, b.positions);
            const AttentionParams ap{il, nh_, 1, kq, r_, kq_scale_, 0, 0.0f};
            const Act attn = first_rows(buf_.attn, n);
            be.attention(ap, q, k, lat, b, kv, attn);  // (n, n_head * latent)
            per_head_matmul(be, L.v_up, attn, r_, 0, o, dv_, 0);
        } else {
            const Act kvu = first_rows(buf_.kvu, n), v = first_rows(buf_.v, n);
            be.matmul(L.kv_up, lat, kvu, OpCategory::Attention);        // per head [k_nope, v]
            be.copy_blocks(kva, k, BlockCopy{rd_, nh_, r_, 0, 0, kq});  // k_R into every head
            be.copy_blocks(kvu, k, BlockCopy{nope_, nh_, 0, nope_ + dv_, rd_, kq});
            be.copy_blocks(kvu, v, BlockCopy{dv_, nh_, nope_, nope_ + dv_, 0, dv_});
            be.copy_blocks(qraw, q, BlockCopy{nope_, nh_, 0, kh, rd_, kq});
            be.rope_qk(q, nh_, k, nh_, kq, rope_, b.positions);
            const AttentionParams ap{il, nh_, nh_, kq, dv_, kq_scale_, 0, 0.0f};
            be.attention(ap, q, k, v, b, kv, o);  // (n, n_head * dv)
        }
        be.matmul(L.wo, o, t, OpCategory::Matmul);
        be.add_rms_norm(x, t, L.ffn_norm, eps, t);  // residual; t = norm(x)
        if (moe_layer(il)) {
            moe_->forward(be, il, t, x);  // x += the routed experts' weighted outputs
        }
        if (!moe_layer(il) || ff_sh_ > 0) {  // the dense FFN, or the shared experts
            const int64_t ff = moe_layer(il) ? ff_sh_ : int64_t(hp_.n_ff[size_t(il)]);
            const Act gate = first_rows(Act{buf_.gate.data, buf_.gate.rows, ff}, n);
            const Act up = first_rows(Act{buf_.up.data, buf_.up.rows, ff}, n);
            const Backend::MatmulOut gu[] = {{&L.gate, gate}, {&L.up, up}};
            be.matmul_many(t, gu, OpCategory::Ffn);
            be.swiglu(gate, up);
            be.matmul(L.down, gate, t, OpCategory::Ffn);
            if (il + 1 < n_run)
                be.add_rms_norm(x, t, layers_[size_t(il + 1)].attn_norm, eps, t);
            else
                be.add(x, t);
        } else if (il + 1 < n_run) {
            be.rms_norm(x, layers_[size_t(il + 1)].attn_norm, eps, t);
        }
    }
    DecoderBuffers head;
    head.t = buf_.t;
    head.logits = buf_.logits;
    return decoder_logits(be, head, b, x, output_norm_, eps, output_);
}

}  // namespace

std::unique_ptr<Architecture> make_deepseek2(const Hparams& hp) {
    return std::make_unique<Deepseek2Architecture>(hp);
}

}  // namespace fluoro
