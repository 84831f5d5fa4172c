#include "telemetry/time_category.h"

namespace fluoro {
namespace {

constexpr std::array<std::string_view, kTimeCategories> kNames = {
    "matmul", "attention", "norm_rope", "ffn", "lm_head", "other", "sampling"};

}  // namespace

std::string_view time_category_name(TimeCategory c) {
    const auto i = size_t(c);
    return i < kNames.size() ? kNames[i] : "unknown";
}

std::optional<TimeCategory> parse_time_category(std::string_view name) {
    for (size_t i = 0; i < kNames.size(); ++i)
        if (kNames[i] == name) return TimeCategory(int(i));
    return std::nullopt;
}

}  // namespace fluoro
