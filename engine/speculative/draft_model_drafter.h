// Drafting with a second, smaller model of the same vocabulary (e.g. SmolLM2-135M for a larger
// SmolLM2): it decodes up to max_n tokens on its own KV cache, sampling with the target's settings
// so its q has the target's transforms. Rolled-back tokens cost nothing extra: the next proposal
// prefills the context, which reuses the longest prefix the draft cache still holds.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "decode/sequence.h"
#include "sampling/sampler.h"
#include "speculative/drafter.h"

namespace fluoro {
class Model;
}

namespace fluoro::spec {

// Throws fluoro::Error naming both files when the vocabularies differ: sizes further apart than
// `size_margin` tokens, or any shared id whose token text differs.
void check_vocab_compatible(const Model& target, const Model& draft, int32_t size_margin = 128);

// Also the self-speculative drafter (Draft & Verify, LayerSkip's early exit without training):
// the target model itself running only its first exit_layer layers, then its final norm and LM
// head, on a cache of its own.
class DraftModelDrafter final : public Drafter {
  public:
    // `kv` must be the draft model's cache with sequence `seq_id`, never used by anything else;
    // both outlive the drafter. `seed` seeds the drafter's own random stream (independent of the
    // target's). exit_layer > 0: run only that many layers (self-speculative).
    DraftModelDrafter(Model& draft, KvCache& kv, int64_t seq_id, uint64_t seed = 0,
                      int64_t exit_layer = 0);
    // "draft_model", or "self_speculative@L" for exit layer L.
    std::string_view name() const override { return name_; }
    void propose(std::span<const int32_t> context, int32_t max_n, const SamplingParams& params,
                 Draft& out) override;
    // The draft's own cache policy (kv/kv_policy.h): with an evicting one the draft follows a
    // target conversation past its context instead of going quiet there.
    void set_kv_policy(const KvPolicyConfig& cfg) { seq_.set_kv_policy(cfg); }
    // Draft length from the draft's confidence (llama.cpp's --draft-p-min): stop at a position
    // where the draft's most likely token has plain-softmax probability (temperature 1, whole
    // vocabulary) below p_min, so a step drafts only while the draft is sure (perhaps nothing: a
    // plain decoding step). 0 = off. The stop looks at the draft's distribution, never at the
    // token it then draws, so sampled verification stays exact (a test checks it by χ²).
    void set_min_confidence(float p_min);

  private:
    Model& model_;
    Sequence seq_;
    std::unique_ptr<Sampler> sampler_;
    uint64_t seed_;
    std::string name_;
    float p_min_ = 0.0f;
    std::vector<float> weights_;  // confidence's softmax scratch
};

}  // namespace fluoro::spec
