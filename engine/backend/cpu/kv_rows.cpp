#include "backend/cpu/kv_rows.h"

#include <cstring>
#include <string>

#include "backend/cpu/kernels/quantize_partner.h"
#include "core/error.h"
#include "tensor/blocks.h"
#include "tensor/fp16.h"
#include "tensor/quantize.h"

namespace fluoro::cpu {
namespace {

[[noreturn]] void unsupported(KvType t) {
    throw UnsupportedError("cpu backend: KV type " + std::string(kv_type_name(t)) +
                           " is not implemented");
}

void require_blocks(KvType t, int64_t n) {
    if (n < 0 || n % kKvQuantBlock != 0)
        throw Error("cpu backend: KV type " + std::string(kv_type_name(t)) + " stores rows of " +
                    std::to_string(kKvQuantBlock) + "-value blocks, not " + std::to_string(n) +
                    " values");
}

uint16_t load_u16(const std::byte* p) {
    uint16_t v;
    std::memcpy(&v, p, sizeof(v));
    return v;
}

// x = q · d, as ggml's dequantize_row_q8_0 (tensor/dequantize.h, bit for bit).
void load_q8_0(const std::byte* src, float* dst, int64_t n_blocks) {
    for (int64_t b = 0; b < n_blocks; ++b, src += sizeof(BlockQ8_0), dst += kQK) {
        const float d = fp16_to_fp32(load_u16(src));
        const auto* qs = reinterpret_cast<const int8_t*>(src + offsetof(BlockQ8_0, qs));
        for (int j = 0; j < kQK; ++j) dst[j] = float(qs[j]) * d;
    }
}

// x = (q − 8) · d; element j in the low nibble of qs[j], element j + 16 in its high nibble.
void load_q4_0(const std::byte* src, float* dst, int64_t n_blocks) {
    constexpr int kHalf = kQK / 2;
    for (int64_t b = 0; b < n_blocks; ++b, src += sizeof(BlockQ4_0), dst += kQK) {
        const float d = fp16_to_fp32(load_u16(src));
        const auto* qs = reinterpret_cast<const uint8_t*>(src + offsetof(BlockQ4_0, qs));
        for (int j = 0; j < kHalf; ++j) {
            dst[j] = float((qs[j] & 0x0F) - 8) * d;
            dst[j + kHalf] = float((qs[j] >> 4) - 8) * d;
        }
    }
}

}  // namespace

void kv_store(KvType t, const float* src, void* dst, int64_t n) {
    switch (t) {
        case KvType::F32:
            std::memcpy(dst, src, size_t(n) * sizeof(float));
            return;
        case KvType::F16:
            vec_math().f32_to_f16(src, static_cast<uint16_t*>(dst), n);
            return;
        case KvType::Q8_0:  // the activations' SIMD quantizer: the reference's bytes, faster
            require_blocks(t, n);
            quantize_partner_row(GgmlType::Q8_0, src, dst, n);
            return;
        case KvType::Q4_0:
            require_blocks(t, n);
            quantize_row(GgmlType::Q4_0, src, dst, n);
            return;
    }
    unsupported(t);
}

void kv_load(KvType t, const void* src, float* dst, int64_t n) {
    switch (t) {
        case KvType::F32:
            std::memcpy(dst, src, size_t(n) * sizeof(float));
            return;
        case KvType::F16: {
            const auto* h = static_cast<const uint16_t*>(src);
            for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(h[i]);
            return;
        }
        case KvType::Q8_0:
        case KvType::Q4_0:
            require_blocks(t, n);
            kv_load_rows(t, static_cast<const std::byte*>(src), 0, 1, n, dst);
            return;
    }
    unsupported(t);
}

void kv_load_rows(KvType t, const std::byte* src, size_t stride, int64_t rows, int64_t elems,
                  float* dst) {
    if (!kv_type_quantized(t)) {
        for (int64_t r = 0; r < rows; ++r)
            kv_load(t, src + size_t(r) * stride, dst + r * elems, elems);
        return;
    }
    require_blocks(t, elems);
    const int64_t n_blocks = elems / kKvQuantBlock;
    for (int64_t r = 0; r < rows; ++r) {
        const std::byte* row = src + size_t(r) * stride;
        if (t == KvType::Q8_0)
            load_q8_0(row, dst + r * elems, n_blocks);
        else
            load_q4_0(row, dst + r * elems, n_blocks);
    }
}

}  // namespace fluoro::cpu
