// The categories a step's wall time is split into: the backend's operation categories
// (backend.h OpCategory, measured around each backend call) plus Sampling, the host time of the
// step spent outside the backend (sampling, detokenization, bookkeeping between forward passes).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "backend/backend.h"

namespace fluoro {

enum class TimeCategory { Matmul, Attention, NormRope, Ffn, LmHead, Other, Sampling, Count };

inline constexpr size_t kTimeCategories = size_t(TimeCategory::Count);
static_assert(size_t(OpCategory::Count) + 1 == kTimeCategories,
              "TimeCategory must be OpCategory plus Sampling, in the same order");

inline constexpr TimeCategory time_category(OpCategory c) {
    return TimeCategory(int(c));
}

// Nanoseconds per category.
using CategoryTimes = std::array<int64_t, kTimeCategories>;

// "matmul", "attention", "norm_rope", "ffn", "lm_head", "other", "sampling".
std::string_view time_category_name(TimeCategory c);
std::optional<TimeCategory> parse_time_category(std::string_view name);

}  // namespace fluoro
