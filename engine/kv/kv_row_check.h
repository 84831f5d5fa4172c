// Finiteness of K/V rows stored outside the engine (the prefix-cache file): one NaN or infinity
// in a restored row makes every attention output that reads it NaN, so every request sharing the
// prefix fails. Checked on the stored bits, without dequantizing: a float's exponent all ones is
// NaN or infinity; a quantized block (q8_0, q4_0) starts with its f16 scale, the only value in it
// that can be non-finite (the quants are small integers).
#pragma once

#include <cstddef>
#include <optional>
#include <span>

#include "settings/settings.h"

namespace fluoro {

// The index of the first value (f32, f16) or block (q8_0, q4_0) of `bytes`, stored as t, that is
// not finite; nullopt when all are. bytes.size() must be a multiple of t's block size (Error).
std::optional<size_t> first_non_finite_kv(KvType t, std::span<const std::byte> bytes);

}  // namespace fluoro
