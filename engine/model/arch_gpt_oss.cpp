// gpt-oss (OpenAI's gpt-oss-20b and -120b; general.architecture "gpt-oss"), as llama.cpp runs
// it (src/models/openai-moe.cpp):
//  * pre-norm blocks: RMSNorm (attn_norm), attention, residual; RMSNorm (post_attention_norm,
//    the FFN's input norm despite its name), the mixture of experts, residual;
//  * attention with biases on Q, K, V and the output projection, GQA, NEOX RoPE (YaRN in the real
//    files), q·k scaled by 1/sqrt(rope dims), and a learned sink logit per query head
//    (attn_sinks: joins each softmax denominator, AttentionParams::sinks);
//  * every even layer (0, 2, ...) attends over a sliding window of attention.sliding_window
//    keys, every odd one over the whole context (llama.cpp's pattern of 2), the window layers at
//    rope.freq_base_swa when the file has it;
//  * experts (model/moe_ffn.h) with biases on the router and every expert matrix, the k largest
//    router logits weighted by their softmax, and the clamped SwiGLU (swiglu_oai);
//  * an untied LM head.
#include <cmath>
#include <memory>
#include <vector>

#include "core/error.h"
#include "model/act_view.h"
#include "model/architecture.h"
#include "model/decoder_buffers.h"
#include "model/moe_ffn.h"
#include "model/weight_binder.h"

namespace fluoro {
namespace {

class GptOssArchitecture final : public Architecture {
  public:
    explicit GptOssArchitecture(const Hparams& hp) : hp_(hp) {}

    void bind(const WeightBinder& w) override {
        w.require_equal_head_dims(hp_);
        const int64_t d = int64_t(hp_.n_embd), nv = int64_t(hp_.n_vocab);
        const int64_t hd = int64_t(hp_.head_dim_k);
        token_embd_ = w.required("token_embd.weight", {d, nv});
        output_norm_ = w.required("output_norm.weight", {d});
        output_ = w.required("output.weight", {d, nv});
        MoeOptions moe;
        moe.norm_weights = true;  // the softmax of the k chosen logits (moe_ffn.h)
        moe.biases = true;
        moe.swiglu_oai = true;
        moe_ = std::make_unique<MoeFfn>(int64_t(hp_.n_layer), d, int64_t(hp_.n_expert),
                                        int64_t(hp_.n_expert_used), int64_t(hp_.n_ff_exp), moe);
        layers_.resize(hp_.n_layer);
        for (int64_t il = 0; il < int64_t(hp_.n_layer); ++il) {
            Layer& L = layers_[size_t(il)];
            const int64_t nh = int64_t(hp_.n_head[size_t(il)]);
            const int64_t nq = nh * hd, nkv = int64_t(hp_.n_head_kv[size_t(il)]) * hd;
            const auto name = [&](const char* s) { return WeightBinder::layer(il, s); };
            L.attn_norm = w.required(name("attn_norm.weight"), {d});
            L.wq = w.required(name("attn_q.weight"), {d, nq});
            L.wk = w.required(name("attn_k.weight"), {d, nkv});
            L.wv = w.required(name("attn_v.weight"), {d, nkv});
            L.bq = w.required(name("attn_q.bias"), {nq});
            L.bk = w.required(name("attn_k.bias"), {nkv});
            L.bv = w.required(name("attn_v.bias"), {nkv});
            L.wo = w.required(name("attn_output.weight"), {nq, d});
            L.bo = w.required(name("attn_output.bias"), {d});
            L.sinks = w.required(name("attn_sinks.weight"), {nh});
            if (L.sinks.type != GgmlType::F32)
                throw FormatError(w.file_name() + ": tensor '" + name("attn_sinks.weight") +
                                  "' is " + std::string(type_name(L.sinks.type)) +
                                  ", expected F32");
            L.ffn_norm = w.required(name("post_attention_norm.weight"), {d});
            moe_->bind_layer(w, il);
        }
    }

    void reserve(Backend& be, int64_t max_tokens, int64_t max_logit_rows) override {
        buf_ = alloc_decoder_buffers(be, hp_, max_tokens, max_logit_rows);
        moe_->reserve(be, max_tokens);
    }

    KvShape kv_shape() const override { return decoder_kv_shape(hp_); }

    RopeParams layer_rope(int64_t il) const override {
        RopeParams p = decoder_rope(hp_, RopeMode::Neox);
        if (layer_window(il) > 0) p.freq_base = hp_.rope_freq_base_swa.value_or(p.freq_base);
        return p;
    }

    int64_t layer_window(int64_t il) const override {
        return il % 2 == 0 ? int64_t(hp_.sliding_window) : 0;
    }

    void set_expert_sink(ExpertChoices* sink) override { moe_->set_sink(sink); }

    Act forward(Backend& be, const Batch& b, KvCache& kv) override {
        const int64_t n = b.size(), hd = int64_t(hp_.head_dim_k);
        const float eps = float(hp_.rms_eps);
        const float kq_scale = 1.0f / std::sqrt(float(hp_.n_rot));
        Act x = first_rows(buf_.x, n), t = first_rows(buf_.t, n), attn = first_rows(buf_.attn, n);

        be.get_rows(token_embd_, b.tokens, x);  // x: (n, n_embd)
        const int64_t n_run = b.layers_to_run(int64_t(layers_.size()));
        moe_->begin_step(n);
        if (n_run > 0) be.rms_norm(x, layers_[0].attn_norm, eps, t);  // t = norm(x)
        for (int64_t il = 0; il < n_run; ++il) {
            const Layer& L = layers_[size_t(il)];
            const int64_t nh = int64_t(hp_.n_head[size_t(il)]),
                          nkv = int64_t(hp_.n_head_kv[size_t(il)]);
            Act q{buf_.q.data, n, nh * hd}, k{buf_.k.data, n, nkv * hd};
            Act v{buf_.v.data, n, nkv * hd};
            attn.width = nh * hd;

            // q: (n, n_head * hd); k, v: (n, n_head_kv * hd), each with its bias
            const Backend::MatmulOut qkv[] = {{&L.wq, q}, {&L.wk, k}, {&L.wv, v}};
            be.matmul_many(t, qkv, OpCategory::Matmul);
            be.add_bias(q, L.bq);
            be.add_bias(k, L.bk);
            be.add_bias(v, L.bv);
            be.rope_qk(q, nh, k, nkv, hd, layer_rope(il), b.positions);
            AttentionParams ap{il, nh, nkv, hd, hd, kq_scale, layer_window(il), 0.0f};
            ap.sinks = &L.sinks;
            be.attention(ap, q, k, v, b, kv, attn);  // attn: (n, n_head * hd)
            be.matmul(L.wo, attn, t, OpCategory::Matmul);
            be.add_bias(t, L.bo);
            be.add_rms_norm(x, t, L.ffn_norm, eps, t);  // residual; t = norm(x)
            moe_->forward(be, il, t, x);                // x += the experts' weighted outputs
            if (il + 1 < n_run) be.rms_norm(x, layers_[size_t(il + 1)].attn_norm, eps, t);
        }
        return decoder_logits(be, buf_, b, x, output_norm_, eps, output_);
    }

  private:
    struct Layer {
        Weight attn_norm, wq, wk, wv, bq, bk, bv, wo, bo, sinks;  // sinks: (n_head) F32
        Weight ffn_norm;                                          // post_attention_norm
    };

    Hparams hp_;
    Weight token_embd_, output_norm_, output_;
    std::vector<Layer> layers_;
    std::unique_ptr<MoeFfn> moe_;
    DecoderBuffers buf_;
};

}  // namespace

std::unique_ptr<Architecture> make_gpt_oss(const Hparams& hp) {
    const std::string key = hp.arch + ".";
    if (hp.n_expert == 0)
        throw FormatError("metadata key '" + key + "expert_count' is missing or 0: " + hp.arch +
                          " is a mixture of experts");
    if (hp.n_ff_exp == 0)
        throw FormatError("metadata key '" + key +
                          "expert_feed_forward_length' is missing: gpt-oss's experts' width");
    if (hp.sliding_window == 0)
        throw FormatError("metadata key '" + key +
                          "attention.sliding_window' is missing or 0: gpt-oss's even layers "
                          "attend over a sliding window");
    return std::make_unique<GptOssArchitecture>(hp);
}

}  // namespace fluoro
