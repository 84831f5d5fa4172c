#include "kv/kv_row_check.h"

#include <cstdint>
#include <cstring>
#include <string>

#include "core/error.h"

namespace fluoro {

std::optional<size_t> first_non_finite_kv(KvType t, std::span<const std::byte> bytes) {
    const KvTypeInfo& info = kv_type_info(t);
    if (bytes.size() % info.block_bytes != 0)
        throw Error("KV rows of " + std::to_string(bytes.size()) + " bytes are not whole " +
                    std::string(info.name) + " blocks of " + std::to_string(info.block_bytes));
    const size_t n = bytes.size() / info.block_bytes;
    if (t == KvType::F32) {
        for (size_t i = 0; i < n; ++i) {
            uint32_t v;
            std::memcpy(&v, bytes.data() + i * sizeof v, sizeof v);
            if ((v & 0x7F800000u) == 0x7F800000u) return i;  // exponent all ones
        }
        return std::nullopt;
    }
    // f16 values, and the f16 scale that opens each q8_0 / q4_0 block.
    for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, bytes.data() + i * info.block_bytes, sizeof h);
        if ((h & 0x7C00u) == 0x7C00u) return i;
    }
    return std::nullopt;
}

}  // namespace fluoro
