#include "backend/attention_capture.h"

namespace fluoro {

std::string_view attention_impl_name(AttentionImpl a) {
    return a == AttentionImpl::Flash ? "flash" : "standard";
}

std::optional<AttentionImpl> parse_attention_impl(std::string_view name) {
    if (name == "flash") return AttentionImpl::Flash;
    if (name == "standard") return AttentionImpl::Standard;
    return std::nullopt;
}

}  // namespace fluoro
