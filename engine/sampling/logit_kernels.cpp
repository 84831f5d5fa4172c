#include "sampling/logit_kernels.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>

#include "sampling/fast_exp.h"

// Per-CPU versions of the exp pass, picked once at load time (GCC/Clang ifunc, ELF only). Not
// under AddressSanitizer: there clang 14's resolver picked the AVX-512 clone on an AVX2-only CPU
// (SIGILL). GCC says ASan with __SANITIZE_ADDRESS__, clang 14 only through __has_feature.
#if defined(__SANITIZE_ADDRESS__)
#define FLUORO_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FLUORO_ASAN 1
#endif
#endif
#if defined(__x86_64__) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(FLUORO_ASAN)
#define FLUORO_CPU_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define FLUORO_CPU_CLONES
#endif

namespace fluoro::sampling {
namespace {

// NaN or +inf, tested on the bits so the loop vectorizes (float compares with NaN do not).
inline uint32_t is_nan_or_pos_inf(float x) {
    const uint32_t bits = std::bit_cast<uint32_t>(x);
    const uint32_t magnitude = bits & 0x7FFFFFFFu;
    const uint32_t positive = (bits >> 31) ^ 1u;
    return static_cast<uint32_t>(magnitude > 0x7F800000u) |
           (static_cast<uint32_t>(magnitude == 0x7F800000u) & positive);
}

// Maps float bits to an int32 that orders like the float (for non-NaN values).
inline int32_t ordered_key(float x) {
    const int32_t bits = std::bit_cast<int32_t>(x);
    return bits ^ ((bits >> 31) & 0x7FFFFFFF);
}

}  // namespace

size_t find_nan_or_pos_inf(std::span<const float> v) {
    uint32_t any = 0;
    for (float x : v) any |= is_nan_or_pos_inf(x);
    if (!any) return v.size();
    for (size_t i = 0; i < v.size(); ++i)
        if (is_nan_or_pos_inf(v[i])) return i;
    return v.size();
}

float max_value(std::span<const float> v) {
    int32_t best = ordered_key(-std::numeric_limits<float>::infinity());
    for (float x : v) best = std::max(best, ordered_key(x));
    return std::bit_cast<float>(best ^ ((best >> 31) & 0x7FFFFFFF));  // the key maps back to itself
}

FLUORO_CPU_CLONES
double exp_shifted_sum(std::span<const float> logits, float max_logit, float scale,
                       std::span<float> out) {
    const size_t n = logits.size();
    const float* in = logits.data();
    float* w = out.data();
    for (size_t i = 0; i < n; ++i) w[i] = fast_exp_nonpositive((in[i] - max_logit) * scale);

    // 16 float lanes per 1024-value block, blocks added in double: vectorizes, and the short float
    // partial sums keep the total accurate to ~1e-7 relative.
    constexpr size_t kLanes = 16;
    constexpr size_t kBlock = 1024;
    double total = 0.0;
    size_t i = 0;
    for (; i + kBlock <= n; i += kBlock) {
        float acc[kLanes] = {};
        for (size_t j = 0; j < kBlock; j += kLanes)
            for (size_t l = 0; l < kLanes; ++l) acc[l] += w[i + j + l];
        for (float a : acc) total += a;
    }
    for (; i < n; ++i) total += w[i];
    return total;
}

}  // namespace fluoro::sampling
