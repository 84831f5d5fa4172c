#include "sampling/token_dist.h"

namespace fluoro {

double TokenDist::prob(int32_t id) const {
    for (size_t i = 0; i < ids.size(); ++i)
        if (ids[i] == id) return probs[i];
    return 0.0;
}

TokenDist TokenDist::point(int32_t id) {
    return TokenDist{{id}, {1.0}};
}

}  // namespace fluoro
