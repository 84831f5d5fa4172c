// A run's expert load, for `fluoro run --show-experts`: the StepEvents' expert routing
// (ExpertRouting, a mixture-of-experts model's choices per layer and token) folded into how many
// token choices each expert of each layer received, and printed one line per layer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "telemetry/events.h"

namespace fluoro::app {

class ExpertLoad {
  public:
    // Adds a step's routing (null: nothing). Throws fluoro::Error when its shape differs from
    // the steps added before (another model) or its arrays do not match its shape.
    void add(const ExpertRouting* r);
    void add(const Event& e);  // a StepEvent's routing; other events are ignored

    bool empty() const { return tokens_ == 0; }
    int64_t tokens() const { return tokens_; }  // tokens routed (each in every layer)
    int32_t n_layer() const { return n_layer_; }
    int32_t n_expert() const { return n_expert_; }
    int32_t n_used() const { return n_used_; }
    // Choices expert e of layer il received (a token counts once per expert it went to).
    int64_t count(int32_t il, int32_t e) const {
        return counts_[size_t(il) * size_t(n_expert_) + size_t(e)];
    }
    // Per layer: "layer 3: 8.0x (max/mean)  e5 21%  e1 17%  e7 12% ...", the experts by share
    // of the layer's choices, the top `shown` (all when 0), the busiest expert's load relative to
    // an even spread first; a header line before.
    std::string format(int shown = 8) const;

  private:
    int32_t n_layer_ = 0, n_expert_ = 0, n_used_ = 0;
    int64_t tokens_ = 0;
    std::vector<int64_t> counts_;  // (n_layer, n_expert)
};

}  // namespace fluoro::app
