#include "backend/cpu/matmul.h"

#include <algorithm>
#include <cstdint>
#include <new>
#include <string>

#include "backend/cpu/kernels/quantize_partner.h"
#include "backend/cpu/kernels/vec_dot.h"
#include "core/error.h"

namespace fluoro::cpu {
namespace {

constexpr size_t kAlign = 64;         // cache line: scratch start and partner-row stride
constexpr int64_t kMinRowChunk = 16;  // output rows per task: enough to amortize task claiming,
constexpr int64_t kMaxRowChunk = 64;  // few enough that ~8 tasks per thread balance the load
// Row pairs pay off from this many tokens up: below it (decode, speculative verification of a
// few tokens) two interleaved weight streams cost more than the shared activation loads save
// (measured with `fluoro bench spec`'s v(k), SmolLM2, 2 threads: v(1) 1.9 -> 1.4).
constexpr int64_t kPairMinTokens = 5;

size_t align_up(size_t n) {
    return (n + kAlign - 1) / kAlign * kAlign;
}

// Bytes between consecutive converted activation rows.
size_t partner_stride(GgmlType partner, int64_t n_in) {
    return align_up(static_cast<size_t>(*row_bytes(partner, static_cast<uint64_t>(n_in))));
}

// The largest partner row of n_in elements: F16/BF16 (2 bytes each) beats Q8_0 (34/32), Q8_1
// (36/32) and Q8_K (292/256) once n_in is a whole block; the block terms cover short rows.
size_t worst_partner_stride(int64_t n_in) {
    const auto n = static_cast<size_t>(n_in);
    const size_t legacy = (n + 31) / 32 * 36;
    const size_t kquant = (n + 255) / 256 * 292;
    return align_up(std::max({2 * n, legacy, kquant}));
}

std::string describe(const WeightView& w) {
    return std::string(type_name(w.type)) + " weights [" + std::to_string(w.n_out) + " x " +
           std::to_string(w.n_in) + "]";
}

void validate(const WeightView& w, const float* x, int64_t n_tok, const float* y) {
    if (!vec_dot_supported(w.type))
        throw UnsupportedError("matmul: no CPU kernel for " + describe(w));
    const uint32_t block = type_traits(w.type).block_elems;
    if (w.n_in <= 0 || w.n_in % block != 0 || w.n_out < 0) {
        throw Error("matmul: bad shape for " + describe(w) + ": n_in must be a positive " +
                    "multiple of " + std::to_string(block) + " and n_out non-negative");
    }
    const uint64_t need = *row_bytes(w.type, static_cast<uint64_t>(w.n_in));
    if (w.row_bytes < need) {
        throw Error("matmul: row stride " + std::to_string(w.row_bytes) + " bytes is shorter " +
                    "than a row of " + describe(w) + " (" + std::to_string(need) + " bytes)");
    }
    // The kernels read blocks in place: rows must be as aligned as their fields (GGUF data is).
    const size_t align = w.type == GgmlType::F32 ? 4 : 2;
    if ((reinterpret_cast<uintptr_t>(w.data) | w.row_bytes) % align != 0) {
        throw Error("matmul: " + describe(w) + " data or row stride is not " +
                    std::to_string(align) + "-byte aligned");
    }
    if (n_tok < 0) throw Error("matmul: negative token count " + std::to_string(n_tok));
    if (n_tok > 0 && w.n_out > 0 && (!w.data || !x || !y))
        throw Error("matmul: null weight, input or output pointer for " + describe(w));
}

}  // namespace

void MatmulScratch::Free::operator()(std::byte* p) const {
    ::operator delete[](p, std::align_val_t{kAlign});
}

void MatmulScratch::reserve(int64_t max_tok, int64_t max_n_in) {
    if (max_tok <= 0 || max_n_in <= 0) return;
    ensure(static_cast<size_t>(max_tok) * worst_partner_stride(max_n_in));
}

std::byte* MatmulScratch::ensure(size_t bytes) {
    if (bytes > capacity_) {
        buffer_.reset(static_cast<std::byte*>(::operator new[](bytes, std::align_val_t{kAlign})));
        capacity_ = bytes;
    }
    return buffer_.get();
}

void matmul(ThreadPool& pool, const WeightView& w, const float* x, int64_t n_tok, float* y,
            MatmulScratch& scratch) {
    validate(w, x, n_tok, y);
    if (n_tok == 0 || w.n_out == 0) return;
    const int64_t n_in = w.n_in;
    const int64_t n_out = w.n_out;
    const RowDotFn dot = row_dot_fn(w.type);

    // Step 1: activations -> partner format, one token per task. F32 weights use x as it is.
    const GgmlType partner = vec_dot_partner(w.type);
    const std::byte* xq = reinterpret_cast<const std::byte*>(x);
    size_t x_stride = static_cast<size_t>(n_in) * sizeof(float);
    if (partner != GgmlType::F32) {
        x_stride = partner_stride(partner, n_in);
        std::byte* buf = scratch.ensure(static_cast<size_t>(n_tok) * x_stride);
        pool.run(n_tok, [&](int64_t t, int) {
            quantize_partner_row(partner, x + t * n_in, buf + static_cast<size_t>(t) * x_stride,
                                 n_in);
        });
        xq = buf;
    }

    // Step 2: chunks of output rows per task; inside a task, token tiles outer and rows inner, so
    // the chunk's weights stay in cache across tiles and each row is decoded once per tile.
    const int64_t target_tasks = 8 * static_cast<int64_t>(pool.size());
    const int64_t chunk =
        std::clamp((n_out + target_tasks - 1) / target_tasks, kMinRowChunk, kMaxRowChunk);
    const int64_t n_chunks = (n_out + chunk - 1) / chunk;
    const auto* w_bytes = static_cast<const std::byte*>(w.data);
    // Prefill: two weight rows per call where a kernel shares each activation block between them.
    // (Decode and small batches keep one row at a time: the rows then stream from memory, and
    // interleaving two streams measured slower than one.)
    const RowPairDotFn pair = n_tok >= kPairMinTokens ? row_pair_dot_fn(w.type) : nullptr;
    pool.run(n_chunks, [&](int64_t c, int) {
        const int64_t o_begin = c * chunk;
        const int64_t o_end = std::min(n_out, o_begin + chunk);
        float out[kMaxDotRows], out1[kMaxDotRows];
        for (int64_t t0 = 0; t0 < n_tok; t0 += kMaxDotRows) {
            const int n_x = static_cast<int>(std::min<int64_t>(kMaxDotRows, n_tok - t0));
            const std::byte* x_tile = xq + static_cast<size_t>(t0) * x_stride;
            float* y_tile = y + t0 * n_out;
            int64_t o = o_begin;
            if (pair) {
                for (; o + 1 < o_end; o += 2) {
                    pair(w_bytes + static_cast<size_t>(o) * w.row_bytes, w.row_bytes, x_tile,
                         x_stride, n_x, n_in, out, out1);
                    for (int t = 0; t < n_x; ++t) {
                        y_tile[t * n_out + o] = out[t];
                        y_tile[t * n_out + o + 1] = out1[t];
                    }
                }
            }
            for (; o < o_end; ++o) {
                dot(w_bytes + static_cast<size_t>(o) * w.row_bytes, x_tile, x_stride, n_x, n_in,
                    out);
                for (int t = 0; t < n_x; ++t) y_tile[t * n_out + o] = out[t];
            }
        }
    });
}

}  // namespace fluoro::cpu
