// What one attention head does for one query token, read from its probability row: the masses on
// the patterns the interpretability literature names, and a label. Used by the attention overview
// (ComputeAttentionOverview: every layer x head of a token at once).
//
// Masses (each in [0, 1], over the keys 0..pos the query attends to):
//  - sink: keys 0..3 (StreamingLLM's attention sinks, as HeadSparsity::sink_mass);
//  - self: the query's own key (pos);
//  - previous: key pos - 1 (a previous-token head);
//  - local: the 8 most recent keys, pos - 7..pos (a sliding-window-like head);
//  - induction: keys j whose preceding token equals the query's token (tokens[j - 1] ==
//    tokens[pos], 1 <= j < pos): attending to "what came after this token last time" (Olsson et
//    al. 2022, "In-context learning and induction heads"); 0 when the token did not occur before.
// Label: the largest of induction, previous, self and sink when it holds at least half the mass
// (one key pattern dominating); else "local" when the 8 most recent keys hold half; else
// "diffuse" when the entropy exceeds half of log(n_keys) (the row is spread out); else "mixed".
// The 1/2 thresholds are the point where one pattern carries more mass than all others together.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace fluoro {

enum class AttentionPattern { Induction, Previous, Self, Sink, Local, Diffuse, Mixed };
std::string_view attention_pattern_name(AttentionPattern p);  // "induction", "previous", ...

struct HeadPattern {
    float entropy = 0;  // nats
    float sink = 0, self = 0, previous = 0, local = 0, induction = 0;
    int64_t max_key = -1;  // the most attended key
    float max_weight = 0;
    AttentionPattern label = AttentionPattern::Mixed;
};

// weights: the query's probabilities over keys 0..pos (pos = weights.size() - 1; summing to ~1);
// tokens: the token at each of those positions (tokens.size() >= weights.size()).
HeadPattern head_pattern(std::span<const float> weights, std::span<const int32_t> tokens);

}  // namespace fluoro
