#include "telemetry/attention_patterns.h"

#include <algorithm>
#include <cmath>

namespace fluoro {

std::string_view attention_pattern_name(AttentionPattern p) {
    switch (p) {
        case AttentionPattern::Induction:
            return "induction";
        case AttentionPattern::Previous:
            return "previous";
        case AttentionPattern::Self:
            return "self";
        case AttentionPattern::Sink:
            return "sink";
        case AttentionPattern::Local:
            return "local";
        case AttentionPattern::Diffuse:
            return "diffuse";
        case AttentionPattern::Mixed:
            return "mixed";
    }
    return "mixed";
}

HeadPattern head_pattern(std::span<const float> w, std::span<const int32_t> tokens) {
    HeadPattern h;
    const int64_t n = int64_t(w.size());
    if (n == 0) return h;
    const int64_t pos = n - 1;
    double entropy = 0;
    for (int64_t j = 0; j < n; ++j) {
        const float p = w[size_t(j)];
        if (p > 0) entropy -= double(p) * std::log(double(p));
        if (p > h.max_weight || h.max_key < 0) h.max_weight = p, h.max_key = j;
        if (j < 4) h.sink += p;
        if (j >= pos - 7) h.local += p;
        if (j >= 1 && j < pos && int64_t(tokens.size()) > pos &&
            tokens[size_t(j - 1)] == tokens[size_t(pos)])
            h.induction += p;
    }
    h.entropy = float(entropy);
    h.self = w[size_t(pos)];
    h.previous = pos >= 1 ? w[size_t(pos - 1)] : 0.0f;
    struct Candidate {
        float mass;
        AttentionPattern label;
    };
    // In this order, so a tie goes to the more specific pattern.
    const Candidate c[] = {{h.induction, AttentionPattern::Induction},
                           {h.previous, AttentionPattern::Previous},
                           {h.self, AttentionPattern::Self},
                           {h.sink, AttentionPattern::Sink}};
    const Candidate* best = std::max_element(std::begin(c), std::end(c),
                                             [](auto& a, auto& b) { return a.mass < b.mass; });
    if (best->mass >= 0.5f)
        h.label = best->label;
    else if (h.local >= 0.5f)
        h.label = AttentionPattern::Local;
    else if (n > 1 && entropy > 0.5 * std::log(double(n)))
        h.label = AttentionPattern::Diffuse;
    else
        h.label = AttentionPattern::Mixed;
    return h;
}

}  // namespace fluoro
