// What the experts dock shows for a mixture-of-experts model: the run's expert load per layer
// (the StepEvents' ExpertRouting counted: how many token choices each expert of each layer
// received) and, per generated token, the experts each layer sent it to with the router's
// weights. The engine chose the experts; this only counts and files its choices.
//
// Token map: generated token i is fed to the model by the run's i-th decode step (the prefill
// samples token 0, decode step 0 feeds it and samples token 1, ...), so the i-th Decode step's
// routing is token i's. The last token is never fed when the run ends on it. Draft and verify
// steps of speculative decoding count toward the load but are not filed by token (which drafted
// rows were accepted is in SpecStep, not here), and the panel says so.
#pragma once

#include <QString>
#include <cstdint>
#include <vector>

#include "telemetry/events.h"

namespace fluoro::ui {

class ExpertState {
  public:
    struct TokenRoute {
        int64_t step = 0;              // the decode step that fed the token
        std::vector<int32_t> experts;  // (n_layer, n_used): most probable first; -1 not run
        std::vector<float> weights;    // the same shape
    };

    // Folds one event; true when what the panel shows changed. A RunStarted starts over. A
    // malformed routing (expert_routing_error), or one of another shape than the run's earlier
    // steps, is not counted and the notice names it.
    bool consume(const Event& event);
    void reset() { *this = ExpertState(); }

    uint64_t run() const { return run_; }
    bool has_run() const { return has_run_; }
    // The load: empty until a routed step arrives; then its shape and the counts.
    bool empty() const { return tokens_ == 0; }
    int64_t tokens() const { return tokens_; }  // tokens routed (each in every layer)
    int32_t n_layer() const { return n_layer_; }
    int32_t n_expert() const { return n_expert_; }
    int32_t n_used() const { return n_used_; }
    // Choices expert e of layer il received (a token counts once per expert it went to).
    int64_t count(int32_t il, int32_t e) const {
        return counts_[size_t(il) * size_t(n_expert_) + size_t(e)];
    }
    int64_t layer_total(int32_t il) const;  // choices made in layer il
    // Steps of the run without routing (a dense model, or telemetry Off) and with it.
    int64_t steps_without() const { return steps_without_; }
    int64_t steps_with() const { return steps_with_; }
    // Tokens routed in draft/verify steps (in the load, not in the token map).
    int64_t speculative_tokens() const { return speculative_tokens_; }
    // Generated tokens a decode step fed (0..routed_tokens() - 1; route_of() is null for one
    // whose step's routing could not be read).
    int64_t routed_tokens() const { return int64_t(routes_.size()); }
    // Generated token `index`'s routing; null when no decode step fed it (yet).
    const TokenRoute* route_of(int64_t index) const;
    // Generated token `index`'s text, "" when it has not arrived.
    QString piece_of(int64_t index) const;
    // Why nothing is shown ("" when the load is shown).
    QString notice() const;

  private:
    uint64_t run_ = 0;
    bool has_run_ = false;
    int32_t n_layer_ = 0, n_expert_ = 0, n_used_ = 0;
    int64_t tokens_ = 0;
    std::vector<int64_t> counts_;  // (n_layer, n_expert)
    bool finished_ = false;
    QString bad_;  // the first routing not counted, and why
    int64_t steps_without_ = 0, steps_with_ = 0, speculative_tokens_ = 0;
    std::vector<TokenRoute> routes_;  // by generated token index
    std::vector<QString> pieces_;     // by generated token index
};

}  // namespace fluoro::ui
