// The codebooks of ggml's IQ1/IQ2/IQ3 quant types. Each grid entry packs 8 (IQ1/IQ2, uint64) or
// 4 (IQ3, uint32) unsigned magnitudes, one per byte, little-endian: element k of the group is
// byte k. The tables are data extracted from ggml-common.h by scripts/gen_iq_grids.py
// (iq_grids.cpp, generated); the sign table follows from its rule and is computed here.
#pragma once

#include <array>
#include <bit>
#include <cstdint>

namespace fluoro {

extern const uint64_t kIQ2XXSGrid[256];  // bytes 0x08, 0x19, 0x2b (8, 25, 43)
extern const uint64_t kIQ2XSGrid[512];   // same magnitudes
extern const uint64_t kIQ2SGrid[1024];   // same magnitudes
extern const uint32_t kIQ3XXSGrid[256];  // bytes 4, 12, ..., 62
extern const uint32_t kIQ3SGrid[512];    // bytes 1, 3, ..., 15
extern const uint64_t kIQ1SGrid[2048];   // bytes as int8: -1, 0, 1

// IQ2_XXS/IQ2_XS/IQ3_XXS signs: a 7-bit index gives the sign bits of 8 values (bit k set = value
// k negative); the 8th bit is chosen so that the count of negatives is even (ggml ksigns_iq2xs).
inline constexpr std::array<uint8_t, 128> kSignsIQ2XS = [] {
    std::array<uint8_t, 128> t{};
    for (unsigned i = 0; i < 128; ++i)
        t[i] = static_cast<uint8_t>(i | (static_cast<unsigned>(std::popcount(i)) & 1u) << 7);
    return t;
}();

}  // namespace fluoro
