#include "backend/cpu/matmul.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "backend/cpu/kernels/interleave.h"
#include "backend/cpu/kernels/quantize_partner.h"
#include "backend/cpu/kernels/vec_dot.h"
#include "core/error.h"
#include "tensor/dequantize.h"

namespace fluoro::cpu {
namespace {

constexpr size_t kAlign = 64;  // cache line: scratch start and partner-row stride
// Prefill: output rows per task enough to amortize task claiming, few enough that ~8 tasks per
// thread balance the load and a task's rows stay in L2 across its token tiles.
constexpr int64_t kMinRowChunk = 16;
constexpr int64_t kMaxRowChunk = 64;
// Decode (one token tile): two tasks per thread. Each task's rows are one contiguous stream from
// memory, and a stream's start costs (the prefetchers ramp up): SmolLM2, 2 threads, Zen 3,
// `fluoro bench -p 0 -n 128`, four alternations: 16-64-row chunks (8 tasks per thread) ~104
// tok/s, one task per thread ~132, two ~143; 90 layers of a 576x1536 Q4_1 matrix
// (fluoro_cpu_matmul_bench BM_MatmulLayers, four alternations) 3.1-3.6 ms -> 2.3-2.7 ms and one
// outlier at 3.9.
constexpr int64_t kStreamTasksPerThread = 2;
// Row pairs pay off from this many tokens up: below it (decode, speculative verification of a
// few tokens) two interleaved weight streams cost more than the shared activation loads save
// (measured with `fluoro bench spec`'s v(k), SmolLM2, 2 threads: v(1) 1.9 -> 1.4).
constexpr int64_t kPairMinTokens = 5;
// Up to one token tile, the calling thread converts the activations itself: a pool region costs
// about as much as converting a few tokens (~0.3 us each for 576 values), and a speculative
// verification runs four of them per layer. Two tokens: `fluoro bench SmolLM2 -p 2 -n 0 -d 200`,
// eight alternations, 3.0 % faster (median; 0.9 % at 7 tokens).
constexpr int64_t kInlineQuantizeTokens = kMaxDotRows;

size_t align_up(size_t n) {
    return (n + kAlign - 1) / kAlign * kAlign;
}

// Bytes between consecutive converted activation rows.
size_t partner_stride(GgmlType partner, int64_t n_in) {
    return align_up(static_cast<size_t>(*row_bytes(partner, static_cast<uint64_t>(n_in))));
}

// The largest partner row of n_in elements: F16/BF16 (2 bytes each) beats Q8_0 (34/32), Q8_1
// (36/32), their widened forms (36/32, 40/32) and Q8_K (292/256) once n_in is a whole block; the
// block terms cover short rows.
size_t worst_partner_stride(int64_t n_in) {
    const auto n = static_cast<size_t>(n_in);
    const size_t legacy = (n + 31) / 32 * sizeof(BlockQ8_1Wide);
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
    // MXFP4 blocks are all bytes (17 each), so its rows may start anywhere.
    const size_t align = w.type == GgmlType::F32 ? 4 : w.type == GgmlType::MXFP4 ? 1 : 2;
    if ((reinterpret_cast<uintptr_t>(w.data) | w.row_bytes) % align != 0) {
        throw Error("matmul: " + describe(w) + " data or row stride is not " +
                    std::to_string(align) + "-byte aligned");
    }
    if (w.interleaved) {
        if (!interleavable(w.type, w.n_out) || !row_group_dot_fn(w.type))
            throw UnsupportedError("matmul: no grouped-row kernel for interleaved " + describe(w));
        if (w.row_bytes != need)
            throw Error("matmul: interleaved " + describe(w) + " must have unpadded rows");
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

namespace {

// Step 1: activations -> partner format, one token per task. F32 weights use x as it is.
struct Partnered {
    const std::byte* data;
    size_t stride;  // bytes between tokens
};

// What the weights' kernels read: their type's partner, widened for interleaved rows.
struct XFormat {
    GgmlType weight;
    bool grouped;
    GgmlType partner() const { return vec_dot_partner(weight); }
    // Whether both read the same converted bytes: the same partner, widened for group kernels
    // into the same format (Q5_0 and Q8_0 groups share one; Q4_K's and Q6_K's differ) or not.
    bool same_bytes(const XFormat& o) const {
        return partner() == o.partner() && grouped == o.grouped &&
               (!grouped || group_x_format(weight) == group_x_format(o.weight));
    }
};

XFormat x_format(const WeightView& w) {
    return {w.type, w.interleaved};
}

Partnered to_partner(ThreadPool& pool, XFormat f, const float* x, int64_t n_tok, int64_t n_in,
                     MatmulScratch& scratch) {
    const GgmlType partner = f.partner();
    if (partner == GgmlType::F32)
        return {reinterpret_cast<const std::byte*>(x), static_cast<size_t>(n_in) * sizeof(float)};
    const size_t stride =
        f.grouped ? align_up(group_x_row_bytes(f.weight, n_in)) : partner_stride(partner, n_in);
    std::byte* buf = scratch.ensure(static_cast<size_t>(n_tok) * stride);
    const auto quantize = [&](int64_t t) {
        std::byte* row = buf + static_cast<size_t>(t) * stride;
        if (f.grouped) {
            quantize_group_x_row(f.weight, x + t * n_in, row, n_in);
        } else {
            quantize_partner_row(partner, x + t * n_in, row, n_in);
        }
    };
    if (n_tok <= kInlineQuantizeTokens) {
        for (int64_t t = 0; t < n_tok; ++t) quantize(t);
    } else {
        pool.run(n_tok, [&](int64_t t, int) { quantize(t); });
    }
    return {buf, stride};
}

// Step 2, for one weight matrix: chunks of output rows, one per task.
struct RowPlan {
    const WeightView* w;
    float* y;
    RowDotFn dot;
    RowGroupDotFn group;       // interleaved rows
    RowGroupDotFn group_pair;  // two interleaved groups at once, where the CPU has a kernel
    RowPairDotFn pair;         // prefill, where a kernel shares activation blocks between two rows
    int64_t chunk;
    int64_t n_chunks;
};

RowPlan plan_rows(const WeightView& w, float* y, int64_t n_tok, int n_threads) {
    int64_t chunk;
    if (n_tok <= kMaxDotRows) {
        // One token tile reads each weight once, from memory: few long streams.
        const int64_t tasks = kStreamTasksPerThread * static_cast<int64_t>(n_threads);
        chunk = std::max(kMinRowChunk, (w.n_out + tasks - 1) / tasks);
    } else {
        const int64_t tasks = 8 * static_cast<int64_t>(n_threads);
        chunk = std::clamp((w.n_out + tasks - 1) / tasks, kMinRowChunk, kMaxRowChunk);
    }
    const RowGroupDotFn group = w.interleaved ? row_group_dot_fn(w.type) : nullptr;
    const RowGroupDotFn group_pair = w.interleaved ? row_group_pair_dot_fn(w.type) : nullptr;
    // Chunks of whole groups, or of group pairs where there is a pair kernel.
    const int64_t unit = group_pair ? 2 * kGroupRows : kGroupRows;
    if (w.interleaved) chunk = (chunk + unit - 1) / unit * unit;
    // (Decode and small batches keep one row at a time: the rows then stream from memory, and
    // interleaving two streams measured slower than one.)
    const RowPairDotFn pair = !group && n_tok >= kPairMinTokens ? row_pair_dot_fn(w.type) : nullptr;
    RowPlan plan{&w, y, row_dot_fn(w.type), group, group_pair, pair, chunk, 0};
    plan.n_chunks = (w.n_out + chunk - 1) / chunk;
    return plan;
}

// Inside a task, token tiles outer and rows inner, so the chunk's weights stay in cache across
// tiles and each row is decoded once per tile.
void run_chunk(const RowPlan& p, const Partnered& x, int64_t n_tok, int64_t c) {
    const WeightView& w = *p.w;
    const int64_t n_out = w.n_out;
    const int64_t o_begin = c * p.chunk;
    const int64_t o_end = std::min(n_out, o_begin + p.chunk);
    const auto* w_bytes = static_cast<const std::byte*>(w.data);
    float out[2 * kGroupRows * kMaxDotRows], out1[kMaxDotRows];
    for (int64_t t0 = 0; t0 < n_tok; t0 += kMaxDotRows) {
        const int n_x = static_cast<int>(std::min<int64_t>(kMaxDotRows, n_tok - t0));
        const std::byte* x_tile = x.data + static_cast<size_t>(t0) * x.stride;
        float* y_tile = p.y + t0 * n_out;
        int64_t o = o_begin;
        // A group's rows are kGroupRows GGUF rows' bytes, stored together; a pair kernel reads
        // two adjacent groups (the same bits per row as one group at a time).
        if (p.group_pair) {
            for (; o + 2 * kGroupRows <= o_end; o += 2 * kGroupRows) {
                p.group_pair(w_bytes + static_cast<size_t>(o) * w.row_bytes, x_tile, x.stride, n_x,
                             w.n_in, out);
                for (int t = 0; t < n_x; ++t)
                    for (int r = 0; r < 2 * kGroupRows; ++r)
                        y_tile[t * n_out + o + r] = out[r * kMaxDotRows + t];
            }
        }
        if (p.group) {
            for (; o < o_end; o += kGroupRows) {
                p.group(w_bytes + static_cast<size_t>(o) * w.row_bytes, x_tile, x.stride, n_x,
                        w.n_in, out);
                for (int t = 0; t < n_x; ++t)
                    for (int r = 0; r < kGroupRows; ++r)
                        y_tile[t * n_out + o + r] = out[r * kMaxDotRows + t];
            }
        }
        if (p.pair) {
            for (; o + 1 < o_end; o += 2) {
                p.pair(w_bytes + static_cast<size_t>(o) * w.row_bytes, w.row_bytes, x_tile,
                       x.stride, n_x, w.n_in, out, out1);
                for (int t = 0; t < n_x; ++t) {
                    y_tile[t * n_out + o] = out[t];
                    y_tile[t * n_out + o + 1] = out1[t];
                }
            }
        }
        for (; o < o_end; ++o) {
            p.dot(w_bytes + static_cast<size_t>(o) * w.row_bytes, x_tile, x.stride, n_x, w.n_in,
                  out);
            for (int t = 0; t < n_x; ++t) y_tile[t * n_out + o] = out[t];
        }
    }
}

// The f32_activations() path: each row dequantized once, dotted with every token in float.
void matmul_dequantized(ThreadPool& pool, const WeightView& w, const float* x, int64_t n_tok,
                        float* y) {
    if (w.interleaved)
        throw Error("matmul: FLUORO_CPU_F32_ACTIVATIONS needs weights in their GGUF layout");
    const int64_t chunk = kMinRowChunk, n_chunks = (w.n_out + chunk - 1) / chunk;
    pool.run(n_chunks, [&](int64_t c, int) {
        std::vector<float> row(static_cast<size_t>(w.n_in));
        const int64_t o_end = std::min(w.n_out, (c + 1) * chunk);
        for (int64_t o = c * chunk; o < o_end; ++o) {
            dequantize_row(w.type, static_cast<const std::byte*>(w.data) + size_t(o) * w.row_bytes,
                           row.data(), w.n_in);
            for (int64_t t = 0; t < n_tok; ++t) {
                const float* xt = x + t * w.n_in;
                float acc[8] = {};
                int64_t i = 0;
                for (; i + 8 <= w.n_in; i += 8)
                    for (int j = 0; j < 8; ++j) acc[j] += row[size_t(i + j)] * xt[i + j];
                for (; i < w.n_in; ++i) acc[0] += row[size_t(i)] * xt[i];
                y[t * w.n_out + o] = ((acc[0] + acc[1]) + (acc[2] + acc[3])) +
                                     ((acc[4] + acc[5]) + (acc[6] + acc[7]));
            }
        }
    });
}

}  // namespace

bool f32_activations() {
    static const bool on = [] {
        const char* v = std::getenv("FLUORO_CPU_F32_ACTIVATIONS");
        return v && std::string_view(v) == "1";
    }();
    return on;
}

void matmul(ThreadPool& pool, const WeightView& w, const float* x, int64_t n_tok, float* y,
            MatmulScratch& scratch) {
    validate(w, x, n_tok, y);
    if (n_tok == 0 || w.n_out == 0) return;
    if (f32_activations()) return matmul_dequantized(pool, w, x, n_tok, y);
    const Partnered xq = to_partner(pool, x_format(w), x, n_tok, w.n_in, scratch);
    const RowPlan plan = plan_rows(w, y, n_tok, pool.size());
    pool.run(plan.n_chunks, [&](int64_t c, int) { run_chunk(plan, xq, n_tok, c); });
}

void matmul_many(ThreadPool& pool, std::span<const MatmulTarget> outs, const float* x,
                 int64_t n_tok, MatmulScratch& scratch) {
    if (outs.empty()) return;
    const XFormat format = x_format(outs[0].w);
    bool shared = outs.size() <= kMaxMatmulTargets && !f32_activations();
    for (const MatmulTarget& o : outs) {
        validate(o.w, x, n_tok, o.y);
        const XFormat f = x_format(o.w);
        // Same bytes: Q5_0 and Q8_0 groups share them (Gemma 3's q/k/v); Q4_K_M's Q4_K q/k and
        // Q6_K v do not.
        shared = shared && o.w.n_in == outs[0].w.n_in && f.same_bytes(format);
    }
    if (!shared) {
        for (const MatmulTarget& o : outs) matmul(pool, o.w, x, n_tok, o.y, scratch);
        return;
    }
    if (n_tok == 0) return;
    const Partnered xq = to_partner(pool, format, x, n_tok, outs[0].w.n_in, scratch);
    RowPlan plans[kMaxMatmulTargets];
    int64_t total = 0;
    for (size_t j = 0; j < outs.size(); ++j) {
        plans[j] = plan_rows(outs[j].w, outs[j].y, n_tok, pool.size());
        total += plans[j].n_chunks;
    }
    pool.run(total, [&](int64_t c, int) {
        size_t j = 0;
        for (; c >= plans[j].n_chunks; ++j) c -= plans[j].n_chunks;
        run_chunk(plans[j], xq, n_tok, c);
    });
}

}  // namespace fluoro::cpu
