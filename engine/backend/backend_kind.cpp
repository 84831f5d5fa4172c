#include "backend/backend_kind.h"

namespace fluoro {

std::string_view backend_kind_name(BackendKind k) {
    return k == BackendKind::Cuda ? "cuda" : "cpu";
}

std::optional<BackendKind> parse_backend_kind(std::string_view name) {
    if (name == "cpu") return BackendKind::Cpu;
    if (name == "cuda") return BackendKind::Cuda;
    return std::nullopt;
}

}  // namespace fluoro
