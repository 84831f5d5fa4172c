// Internal to the CPU kernels: the VecMath kernels (vec_math.h) written once over a vector type V
// and compiled per instruction set — vec_math_generic.cpp (V = one float, libm), vec_math_x86.cpp
// (V = 8 lanes of AVX2 + FMA + F16C, and 16 lanes of AVX-512). Everything has internal linkage,
// so each translation unit keeps its own copy compiled for its target.
//
// V provides: T (the vector), W (lanes), kRegisters (vector registers the compiler can allocate:
// pv sizes its accumulator block by it), zero/set1/load/load(fp16)/store/store_f16/add/sub/mul/
// div/fma/max/min/reduce_add/reduce_max/reduce4 (four horizontal sums at once)/exp, and scalar
// helpers for the tails: f16(uint16_t) -> float, to_f16(float), exp1(float).
//
// exp(x) for the SIMD types: x = n·ln2 + r with n = round(x·log2 e), |r| <= ln2/2 (ln2 split in
// a high part exact in float and a low part), e^r by its Taylor polynomial to r⁶ (truncation error
// < 1.3e-7 relative), times 2^n. Inputs below -87.3 give 0, above 88 are clamped (they only occur
// in tanh/silu, which saturate there).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "backend/cpu/kernels/vec_math.h"

namespace fluoro::cpu::detail {
namespace {

// Rows ahead that qk and pv prefetch when one KV head's keys and values are a strided stream (its
// slice of every cached row, 128 of 384 bytes for SmolLM2, in a token-major cache), which the
// hardware prefetchers follow poorly once the cache is read from memory rather than L3
// (docs/PERFORMANCE.md, "Decode at depth"). The engine's head-major cache (KvShape::head_major)
// gives each head a sequential stream instead, which the hardware follows by itself.
constexpr int64_t kPrefetchRows = 32;

inline void prefetch_lines(const void* p, size_t bytes) {
    const auto* b = static_cast<const char*>(p);
    for (size_t i = 0; i < bytes; i += 64) __builtin_prefetch(b + i);
}

template <class V>
struct VecMathImpl {
    using T = typename V::T;
    static constexpr int64_t W = V::W;

    static void f32_to_f16(const float* src, uint16_t* dst, int64_t n) {
        int64_t i = 0;
        for (; i + W <= n; i += W) V::store_f16(dst + i, V::load(src + i));
        for (; i < n; ++i) dst[i] = V::to_f16(src[i]);
    }

    static void round_f16(const float* src, float* dst, int64_t n) {
        int64_t i = 0;
        for (; i + W <= n; i += W) {
            alignas(64) uint16_t h[W];
            V::store_f16(h, V::load(src + i));
            V::store(dst + i, V::load(h));
        }
        for (; i < n; ++i) dst[i] = V::f16(V::to_f16(src[i]));
    }

    template <class E>
    static float elem(const E* p) {
        if constexpr (sizeof(E) == 2)
            return V::f16(*p);
        else
            return *p;
    }

    // How qk and pv read a cached row: as blocks of kBlock elements (kBlockBytes bytes each), a
    // block's scale read once (scale) and its elements [o, o + W) loaded as a float vector (load).
    // A plain row (F32, F16) is blocks of one vector without a scale. A quantized row (ggml's
    // Q8_0 / Q4_0 blocks, kv_rows.h) is dequantized in registers as kv_load_rows dequantizes it
    // to memory: x = q · d (or (q − 8) · d), exact in float, so attention over quantized rows
    // gives the same bits as the float kernels over the dequantized rows, without the copy.
    template <class E>
    struct PlainRows {
        using Elem = E;
        static constexpr bool kQuantized = false;
        static constexpr int64_t kBlock = W;
        static constexpr size_t kBlockBytes = size_t(W) * sizeof(E);
        static T scale(const std::byte*) { return V::zero(); }
        static T load(const std::byte* block, T, int64_t) {
            return V::load(reinterpret_cast<const E*>(block));
        }
    };
    static float block_scale(const std::byte* block) {
        uint16_t h;
        std::memcpy(&h, block, sizeof(h));
        return V::f16(h);
    }
    struct Q8_0Rows {
        static constexpr bool kQuantized = true;
        static constexpr int64_t kBlock = 32;
        static constexpr size_t kBlockBytes = 2 + 32;  // fp16 d, 32 int8
        static T scale(const std::byte* block) { return V::set1(block_scale(block)); }
        static T load(const std::byte* block, T d, int64_t o) {
            return V::mul(V::load_i8(reinterpret_cast<const int8_t*>(block + 2) + o), d);
        }
    };
    struct Q4_0Rows {
        static constexpr bool kQuantized = true;
        static constexpr int64_t kBlock = 32;
        static constexpr size_t kBlockBytes = 2 + 16;  // fp16 d; element j, j + 16 in byte j
        static T scale(const std::byte* block) { return V::set1(block_scale(block)); }
        static T load(const std::byte* block, T d, int64_t o) {
            const auto* qs = reinterpret_cast<const uint8_t*>(block + 2);
            const T q =
                o < 16 ? V::load_nibbles(qs + o, false) : V::load_nibbles(qs + o - 16, true);
            return V::mul(V::sub(q, V::set1(8.0f)), d);
        }
    };
    template <class R>
    static size_t row_bytes(int64_t elems) {
        return size_t(elems / R::kBlock) * R::kBlockBytes;
    }

    // Four keys' scores (nk <= 4 of them real; the others' accumulators stay zero and are
    // discarded), each reduced on its own in a fixed lane order by reduce4.
    template <class R, int GN>
    static void qk_four(const float* q, int64_t dk, const std::byte* k, size_t k_stride, int nk,
                        float scale, float* s, int64_t s_stride) {
        const std::byte* kr[4];
        for (int kk = 0; kk < 4; ++kk) kr[kk] = k + size_t(kk < nk ? kk : 0) * k_stride;
        T acc[GN][4];
        for (int g = 0; g < GN; ++g)
            for (int kk = 0; kk < 4; ++kk) acc[g][kk] = V::zero();
        for (int64_t i = 0; i < dk; i += R::kBlock) {
            T d[4];  // the missing keys' pointers are row 0's: read, never used
            for (int kk = 0; kk < 4; ++kk) d[kk] = R::scale(kr[kk]);
            for (int64_t o = 0; o < R::kBlock; o += W) {
                T qv[GN];
                for (int g = 0; g < GN; ++g) qv[g] = V::load(q + g * dk + i + o);
                for (int kk = 0; kk < 4; ++kk) {
                    if (kk >= nk) break;
                    const T kv = R::load(kr[kk], d[kk], o);
                    for (int g = 0; g < GN; ++g) acc[g][kk] = V::fma(qv[g], kv, acc[g][kk]);
                }
            }
            for (int kk = 0; kk < 4; ++kk) kr[kk] += R::kBlockBytes;
        }
        for (int g = 0; g < GN; ++g) {
            float sums[4];
            V::reduce4(acc[g][0], acc[g][1], acc[g][2], acc[g][3], sums);
            for (int kk = 0; kk < nk; ++kk) s[g * s_stride + kk] = sums[kk] * scale;
        }
    }

    // Scores of GN query heads (GN <= 4) against n key rows: each key vector is loaded once.
    // Four keys at a time where the head dimension is a whole number of vectors: their four
    // accumulators per head are reduced together (V::reduce4), which costs far fewer shuffles
    // than four horizontal sums; a short head (64 dims) spends most of its time there. Quantized
    // rows always take this path (a 32-value block is a whole number of vectors).
    template <class R, int GN>
    static void qk_heads(const float* q, int64_t dk, const std::byte* k, size_t k_stride, int64_t n,
                         float scale, float* s, int64_t s_stride) {
        int64_t j = 0;
        if (R::kQuantized || dk % W == 0) {
            // Keys in groups of four; the last 1-3 go through the same reduction with zero
            // vectors in the empty slots, so a score's rounding does not depend on where its key
            // falls in a run (paged blocks, split key ranges and batch sizes agree bit for bit).
            // Only a strided stream (a slice of each row) is fetched ahead; whole rows the
            // hardware follows by itself.
            const size_t bytes = row_bytes<R>(dk);
            const int64_t ahead = k_stride > bytes ? kPrefetchRows : n;
            for (; j + 4 <= n; j += 4) {
                for (int64_t r = j + ahead; r < std::min(n, j + ahead + 4); ++r)
                    prefetch_lines(k + size_t(r) * k_stride, bytes);
                qk_four<R, GN>(q, dk, k + size_t(j) * k_stride, k_stride, 4, scale, s + j,
                               s_stride);
            }
            if (j < n)
                qk_four<R, GN>(q, dk, k + size_t(j) * k_stride, k_stride, int(n - j), scale, s + j,
                               s_stride);
            return;
        }
        if constexpr (!R::kQuantized) {
            using E = typename R::Elem;
            for (; j < n; ++j) {
                const E* kr = reinterpret_cast<const E*>(k + size_t(j) * k_stride);
                T acc[GN];
                for (int g = 0; g < GN; ++g) acc[g] = V::zero();
                int64_t i = 0;
                for (; i + W <= dk; i += W) {
                    const T kv = V::load(kr + i);
                    for (int g = 0; g < GN; ++g)
                        acc[g] = V::fma(V::load(q + g * dk + i), kv, acc[g]);
                }
                for (int g = 0; g < GN; ++g) {
                    float sum = V::reduce_add(acc[g]);
                    for (int64_t t = i; t < dk; ++t) sum += q[g * dk + t] * elem(kr + t);
                    s[g * s_stride + j] = sum * scale;
                }
            }
        }
    }

    template <class R>
    static void qk_typed(const float* q, int group, int64_t dk, const std::byte* k, size_t k_stride,
                         int64_t n, float scale, float* s, int64_t s_stride) {
        for (int g0 = 0; g0 < group; g0 += 4) {
            const float* qg = q + g0 * dk;
            float* sg = s + g0 * s_stride;
            switch (std::min(4, group - g0)) {
                case 1:
                    qk_heads<R, 1>(qg, dk, k, k_stride, n, scale, sg, s_stride);
                    break;
                case 2:
                    qk_heads<R, 2>(qg, dk, k, k_stride, n, scale, sg, s_stride);
                    break;
                case 3:
                    qk_heads<R, 3>(qg, dk, k, k_stride, n, scale, sg, s_stride);
                    break;
                default:
                    qk_heads<R, 4>(qg, dk, k, k_stride, n, scale, sg, s_stride);
                    break;
            }
        }
    }

    // Calls fn(R{}) with the row reader R of elem.
    template <class Fn>
    static void with_rows(KvElem elem, Fn&& fn) {
        switch (elem) {
            case KvElem::F16:
                return fn(PlainRows<uint16_t>{});
            case KvElem::Q8_0:
                return fn(Q8_0Rows{});
            case KvElem::Q4_0:
                return fn(Q4_0Rows{});
            case KvElem::F32:
                break;
        }
        fn(PlainRows<float>{});
    }

    static void qk(KvElem elem_type, const float* q, int group, int64_t dk, const std::byte* k,
                   size_t k_stride, int64_t n, float scale, float* s, int64_t s_stride) {
        with_rows(elem_type, [&](auto rows) {
            qk_typed<decltype(rows)>(q, group, dk, k, k_stride, n, scale, s, s_stride);
        });
    }

    // o[g] += Σ_j p[g][j] · v_j over U vectors of output columns starting at d: the GN × U
    // accumulators stay in registers while the n value rows stream past, each row's GN weights
    // broadcast once and each of its U vectors loaded once. Every output element is still the
    // running sum over the rows in order (one V::fma per row), whatever U is.
    // d is a multiple of U · W and U, W and kBlock are powers of two, so a block boundary falls
    // only before a vector u with (u · W) % kBlock == 0.
    // `prefetch`: bytes of each value row (from column d) to fetch kPrefetchRows rows ahead.
    template <class R, int GN, int U>
    static void pv_columns(const float* p, int64_t p_stride, int64_t n, const std::byte* v,
                           size_t v_stride, int64_t d, float* o, int64_t o_stride,
                           size_t prefetch) {
        T acc[GN][U];
        for (int g = 0; g < GN; ++g)
            for (int u = 0; u < U; ++u) acc[g][u] = V::load(o + g * o_stride + d + u * W);
        const size_t first_block = size_t(d / R::kBlock) * R::kBlockBytes;
        for (int64_t j = 0; j < n; ++j) {
            const std::byte* vr = v + size_t(j) * v_stride;
            if (prefetch > 0 && j + kPrefetchRows < n)
                prefetch_lines(v + size_t(j + kPrefetchRows) * v_stride + first_block, prefetch);
            T pj[GN];
            for (int g = 0; g < GN; ++g) pj[g] = V::set1(p[g * p_stride + j]);
            T scale = V::zero();
            for (int u = 0; u < U; ++u) {
                const int64_t col = d + u * W;
                const std::byte* block = vr + size_t(col / R::kBlock) * R::kBlockBytes;
                if (u == 0 || (u * W) % R::kBlock == 0) scale = R::scale(block);
                const T vv = R::load(block, scale, col % R::kBlock);
                for (int g = 0; g < GN; ++g) acc[g][u] = V::fma(pj[g], vv, acc[g][u]);
            }
        }
        for (int g = 0; g < GN; ++g)
            for (int u = 0; u < U; ++u) V::store(o + g * o_stride + d + u * W, acc[g][u]);
    }

    // The widest block of output vectors pv keeps in registers for GN heads: GN × U accumulators,
    // the row's GN broadcast weights, one loaded vector and (quantized rows) a block scale must
    // fit in the registers. Wider is faster while it fits: each accumulator takes one
    // multiply-add per row, a dependency chain, and the FMA units need about latency × issue
    // width (4 × 2 on the x86 cores here) chains to stay busy. SmolLM2's three query heads per KV
    // head had 6 (U = 2) and now 12 (U = 4): one layer's decode attention over 4096 f16 keys in
    // cache, fluoro_cpu_attention_bench on Zen 3, 118 / 114 µs before, 100 / 95 µs after.
    template <class R, int GN>
    static constexpr int pv_unroll() {
        int u = 8;
        while (u > 1 && GN * u + GN + 1 + (R::kQuantized ? 1 : 0) > V::kRegisters) u /= 2;
        return u;
    }

    // Output columns [d, dv) in passes of U vectors, then narrower passes for what is left.
    template <class R, int GN, int U>
    static void pv_passes(const float* p, int64_t p_stride, int64_t n, const std::byte* v,
                          size_t v_stride, int64_t d, int64_t dv, float* o, int64_t o_stride,
                          size_t prefetch_first) {
        for (; d + U * W <= dv; d += U * W)
            pv_columns<R, GN, U>(p, p_stride, n, v, v_stride, d, o, o_stride,
                                 d == 0 ? prefetch_first : 0);
        if constexpr (U > 1)
            pv_passes<R, GN, U / 2>(p, p_stride, n, v, v_stride, d, dv, o, o_stride,
                                    prefetch_first);
    }

    template <class R, int GN>
    static void pv_heads(const float* p, int64_t p_stride, int64_t n, const std::byte* v,
                         size_t v_stride, int64_t dv, float* o, int64_t o_stride) {
        // The first pass over the rows prefetches all of each row's columns, for strided streams
        // only.
        const size_t bytes = row_bytes<R>(dv);
        pv_passes<R, GN, pv_unroll<R, GN>()>(p, p_stride, n, v, v_stride, 0, dv, o, o_stride,
                                             v_stride > bytes ? bytes : 0);
        const int64_t d = dv / W * W;
        if constexpr (!R::kQuantized) {  // a quantized row is whole vectors
            using E = typename R::Elem;
            for (int64_t c = d; c < dv; ++c) {
                for (int g = 0; g < GN; ++g) {
                    float sum = o[g * o_stride + c];
                    for (int64_t j = 0; j < n; ++j)
                        sum += p[g * p_stride + j] *
                               elem(reinterpret_cast<const E*>(v + size_t(j) * v_stride) + c);
                    o[g * o_stride + c] = sum;
                }
            }
        }
    }

    template <class R>
    static void pv_typed(const float* p, int group, int64_t p_stride, int64_t n, const std::byte* v,
                         size_t v_stride, int64_t dv, float* o, int64_t o_stride) {
        for (int g0 = 0; g0 < group; g0 += 4) {
            const float* pg = p + g0 * p_stride;
            float* og = o + g0 * o_stride;
            switch (std::min(4, group - g0)) {
                case 1:
                    pv_heads<R, 1>(pg, p_stride, n, v, v_stride, dv, og, o_stride);
                    break;
                case 2:
                    pv_heads<R, 2>(pg, p_stride, n, v, v_stride, dv, og, o_stride);
                    break;
                case 3:
                    pv_heads<R, 3>(pg, p_stride, n, v, v_stride, dv, og, o_stride);
                    break;
                default:
                    pv_heads<R, 4>(pg, p_stride, n, v, v_stride, dv, og, o_stride);
                    break;
            }
        }
    }

    static void pv(KvElem elem_type, const float* p, int group, int64_t p_stride, int64_t n,
                   const std::byte* v, size_t v_stride, int64_t dv, float* o, int64_t o_stride) {
        with_rows(elem_type, [&](auto rows) {
            pv_typed<decltype(rows)>(p, group, p_stride, n, v, v_stride, dv, o, o_stride);
        });
    }

    static float max(const float* x, int64_t n) {
        int64_t i = 0;
        float m = x[0];
        if (n >= W) {
            T acc = V::load(x);
            for (i = W; i + W <= n; i += W) acc = V::max(acc, V::load(x + i));
            m = V::reduce_max(acc);
        }
        for (; i < n; ++i) m = std::max(m, x[i]);
        return m;
    }

    static float exp_sub_sum(float* x, int64_t n, float sub) {
        const T vsub = V::set1(sub);
        T acc = V::zero();
        int64_t i = 0;
        for (; i + W <= n; i += W) {
            const T e = V::exp(V::sub(V::load(x + i), vsub));
            V::store(x + i, e);
            acc = V::add(acc, e);
        }
        float sum = V::reduce_add(acc);
        for (; i < n; ++i) {
            x[i] = V::exp1(x[i] - sub);
            sum += x[i];
        }
        return sum;
    }

    static SoftmaxStats softmax_stats(const float* s, int64_t n, float lse, float cut, float* p,
                                      float* block_max) {
        const T vlse = V::set1(lse), vcut = V::set1(cut);
        T acc_p = V::zero(), acc_ps = V::zero();
        float tail_p = 0, tail_ps = 0;
        int64_t below = 0;
        for (int64_t b0 = 0; b0 < n; b0 += kSoftmaxStatsBlock) {
            const int64_t b1 = std::min(n, b0 + kSoftmaxStatsBlock);
            int64_t i = b0;
            float m = s[b0];
            if (b1 - b0 >= W) {
                T vmax = V::load(s + b0);
                for (; i + W <= b1; i += W) {
                    const T x = V::load(s + i);
                    const T e = V::exp(V::sub(x, vlse));
                    V::store(p + i, e);
                    acc_p = V::add(acc_p, e);
                    acc_ps = V::fma(e, x, acc_ps);
                    vmax = V::max(vmax, x);
                    below += V::count_less(x, vcut);
                }
                m = V::reduce_max(vmax);
            }
            for (; i < b1; ++i) {
                const float e = V::exp1(s[i] - lse);
                p[i] = e;
                tail_p += e;
                tail_ps += e * s[i];
                m = std::max(m, s[i]);
                below += s[i] < cut ? 1 : 0;
            }
            block_max[b0 / kSoftmaxStatsBlock] = m;
        }
        return {V::reduce_add(acc_p) + tail_p, V::reduce_add(acc_ps) + tail_ps, below};
    }

    static void scale(float* x, int64_t n, float s, bool round) {
        const T vs = V::set1(s);
        int64_t i = 0;
        for (; i + W <= n; i += W) V::store(x + i, V::mul(V::load(x + i), vs));
        for (; i < n; ++i) x[i] *= s;
        if (round) round_f16(x, x, n);
    }

    // tanh(y) = 1 - 2 / (e^{2y} + 1): saturates to ±1 as e^{2y} goes to inf or 0.
    static T tanh(T y) {
        const T one = V::set1(1.0f);
        const T e = V::exp(V::add(y, y));
        return V::sub(one, V::div(V::set1(2.0f), V::add(e, one)));
    }
    static float tanh1(float y) { return 1.0f - 2.0f / (V::exp1(2.0f * y) + 1.0f); }

    static void softcap(float* x, int64_t n, float cap) {
        const T vcap = V::set1(cap), vinv = V::set1(1.0f / cap);
        int64_t i = 0;
        for (; i + W <= n; i += W)
            V::store(x + i, V::mul(vcap, tanh(V::mul(V::load(x + i), vinv))));
        for (; i < n; ++i) x[i] = cap * tanh1(x[i] / cap);
    }

    static void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps) {
        const double sum = V::sum_squares_f64(x, n);
        const float s = 1.0f / std::sqrt(float(sum / double(n)) + eps);
        const T vs = V::set1(s);
        int64_t i = 0;
        for (; i + W <= n; i += W)
            V::store(y + i, V::mul(V::mul(V::load(x + i), vs), V::load(w + i)));
        for (; i < n; ++i) y[i] = (x[i] * s) * w[i];
    }

    static void swiglu(float* gate, const float* up, int64_t n) {
        const T one = V::set1(1.0f);
        int64_t i = 0;
        for (; i + W <= n; i += W) {
            const T g = V::load(gate + i);
            const T silu = V::div(g, V::add(one, V::exp(V::sub(V::zero(), g))));
            V::store(gate + i, V::mul(silu, V::load(up + i)));
        }
        for (; i < n; ++i) gate[i] = gate[i] / (1.0f + V::exp1(-gate[i])) * up[i];
    }

    static void geglu_tanh(float* gate, const float* up, int64_t n) {
        constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
        const T half = V::set1(0.5f), one = V::set1(1.0f), c = V::set1(kSqrt2OverPi),
                a = V::set1(0.044715f);
        int64_t i = 0;
        for (; i + W <= n; i += W) {
            const T x = V::load(gate + i);
            const T inner = V::mul(V::mul(c, x), V::fma(V::mul(a, x), x, one));
            const T gelu = V::mul(V::mul(half, x), V::add(one, tanh(inner)));
            V::store(gate + i, V::mul(gelu, V::load(up + i)));
        }
        for (; i < n; ++i) {
            const float x = gate[i];
            gate[i] =
                0.5f * x * (1.0f + tanh1(kSqrt2OverPi * x * (1.0f + 0.044715f * x * x))) * up[i];
        }
    }

    static void add(float* x, const float* y, int64_t n) {
        int64_t i = 0;
        for (; i + W <= n; i += W) V::store(x + i, V::add(V::load(x + i), V::load(y + i)));
        for (; i < n; ++i) x[i] += y[i];
    }

    static VecMath table() {
        return VecMath{&f32_to_f16,  &round_f16,     &qk,    &pv,      &max,
                       &exp_sub_sum, &softmax_stats, &scale, &softcap, &rms_norm,
                       &swiglu,      &geglu_tanh,    &add};
    }
};

}  // namespace
}  // namespace fluoro::cpu::detail
