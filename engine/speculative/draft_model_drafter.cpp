#include "speculative/draft_model_drafter.h"

#include <cstdlib>
#include <string>

#include "core/error.h"
#include "model/model.h"
#include "sampling/logit_kernels.h"

namespace fluoro::spec {

void check_vocab_compatible(const Model& target, const Model& draft, int32_t size_margin) {
    const tok::Vocab& a = target.tokenizer().vocab();
    const tok::Vocab& b = draft.tokenizer().vocab();
    const auto who = [&] {
        return "draft model " + draft.file().name() + " and target " + target.file().name();
    };
    if (std::abs(a.size() - b.size()) > size_margin)
        throw Error(who() + " have different vocabularies: " + std::to_string(b.size()) + " vs " +
                    std::to_string(a.size()) + " tokens");
    const int32_t n = std::min(a.size(), b.size());
    for (int32_t id = 0; id < n; ++id)
        if (a.text(id) != b.text(id))
            throw Error(who() + " have different vocabularies: token " + std::to_string(id) +
                        " is '" + std::string(b.text(id)) + "' in the draft and '" +
                        std::string(a.text(id)) + "' in the target");
}

DraftModelDrafter::DraftModelDrafter(Model& draft, KvCache& kv, int64_t seq_id, uint64_t seed,
                                     int64_t exit_layer)
    : model_(draft), seq_(draft, kv, seq_id), seed_(seed) {
    const auto n_layer = int64_t(draft.hparams().n_layer);
    if (exit_layer < 0 || exit_layer >= n_layer)
        throw Error("self-speculative draft: exit layer " + std::to_string(exit_layer) +
                    " must be in [1, " + std::to_string(n_layer - 1) + "] for " +
                    draft.file().name() + " (" + std::to_string(n_layer) + " layers)");
    seq_.set_exit_layer(exit_layer);
    name_ = exit_layer > 0 ? "self_speculative@" + std::to_string(exit_layer) : "draft_model";
}

void DraftModelDrafter::set_min_confidence(float p_min) {
    if (!(p_min >= 0.0f && p_min < 1.0f))
        throw Error("draft confidence p_min " + std::to_string(p_min) + " must be in [0, 1)");
    p_min_ = p_min;
}

void DraftModelDrafter::propose(std::span<const int32_t> context, int32_t max_n,
                                const SamplingParams& params, Draft& out) {
    out.clear();
    if (max_n < 1 || context.empty()) return;
    if (seq_.kv_policy().kind == KvPolicyKind::Full &&
        int64_t(context.size()) + max_n > seq_.context_size()) {
        max_n = int32_t(seq_.context_size() - int64_t(context.size()));
        if (max_n < 1) return;
    }
    SamplingParams p = params;
    p.seed = seed_;
    if (!sampler_) {
        sampler_ = std::make_unique<Sampler>(p, int32_t(model_.n_vocab()));
    } else {
        p.seed = sampler_->params().seed;  // new settings, same random stream
        sampler_->set_params(p);
    }
    std::span<const float> logits = seq_.prefill(context);
    for (int32_t i = 0; i < max_n; ++i) {
        if (p_min_ > 0.0f) {
            // The draft's most likely token has plain-softmax probability exp(0) / sum. Decided
            // before drawing: a stop that looked at the drawn token would make the drafted
            // tokens q conditioned on passing it, and sampled verification inexact.
            const float max = sampling::max_value(logits);
            weights_.resize(logits.size());
            if (sampling::exp_shifted_sum(logits, max, 1.0f, weights_) * double(p_min_) > 1.0)
                break;
        }
        TokenDist q;
        sampler_->distribution(logits, seq_.tokens(), q);
        const int32_t x = q.ids.size() == 1 ? q.ids[0] : sampler_->draw_from(q);
        out.ids.push_back(x);
        out.q.push_back(std::move(q));
        if (i + 1 < max_n) logits = seq_.decode(x);
    }
}

}  // namespace fluoro::spec
