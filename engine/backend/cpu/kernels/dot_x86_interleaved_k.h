// Internal to the CPU kernels: the row-group kernels for interleaved Q4_K weights (interleave.h:
// BlockQ4_Kx8) against BlockQ8_KWide activations and, at the end, Q6_K (BlockQ6_Kx8) against
// Q8_K, x86. Included by dot_avx2.cpp and dot_avx512.cpp inside their target regions, after
// dot_x86_interleaved.h.
//
// Each 32-bit lane of a register is one row, 4 of its unsigned nibbles against the same 4
// activation bytes broadcast to every lane (as the Q4_1 group kernels), so a sub-block's sum
// S_rj = Σ q·x forms in row r's own lane. Per super-block and token, all in exact integers:
//   isum_r = Σ_j sc_rj · S_rj          (|.| <= 8 · 63 · 32 · 15 · 128 < 2^31)
//   msum_r = Σ_j m_rj · bsum32_j       (|.| <= 8 · 63 · 4096)
// then two float steps per lane, in this order:
//   acc_r -= (dmin_r · d_x) · msum_r;  acc_r += (d_r · d_x) · isum_r
// ggml's scalar code computes the same two integer sums; only the float order differs. AVX2 sums
// each sub-block's nibble products in int16 (8 chunks of vpmaddubsw pairs: 8 · 2 · 15 · 128 =
// 30720 < 32767) and vpmaddwd multiplies by the scale while widening; AVX-512 VNNI sums in int32
// (vpdpbusd) and multiplies (vpmulld). The integers are the same, so every instruction set, tile
// and group count (one group in 256-bit registers, two in 512-bit ones) gives a row the same bits.
//
// Why: a row kernel (Q4_KSimd) reduces each super-block's sums across a register and converts
// its scales per row and token; here one pass unpacks eight or sixteen rows' scales per
// super-block and tile, and no horizontal add is left in the loop (prefill of a Q4_K_M model is
// mostly these matrices).
#pragma once

#include "backend/cpu/kernels/dot_x86_interleaved.h"

namespace fluoro::cpu::detail {
namespace {
namespace x86 {

// The scales and mins of one group block as bytes, [sub-block][row] (kRows = 8 or 16 across two
// groups, whose rows start at column `row0`).
template <int kRows>
struct K4Scales {
    alignas(32) uint8_t sc[8][kRows];
    alignas(32) uint8_t mn[8][kRows];
};

template <int kRows>
inline void unpack_k4_scales(const BlockQ4_Kx8& b, int row0, K4Scales<kRows>& out) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x03);
    const __m256i hi = load256(b.sch);
    const __m256i tops[2] = {_mm256_and_si256(hi, m4),
                             _mm256_and_si256(_mm256_srli_epi16(hi, 4), m4)};
    for (int half = 0; half < 2; ++half) {  // sub-blocks 4·half .. 4·half + 3
        const __m256i a = load256(b.scm[4 * half]);
        const __m256i top = tops[half];
        const __m256i sc = _mm256_or_si256(_mm256_and_si256(a, m4),
                                           _mm256_slli_epi16(_mm256_and_si256(top, m2), 4));
        const __m256i mn =
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(a, 4), m4),
                            _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(top, 2), m2), 4));
        alignas(32) uint8_t sc_b[32], mn_b[32];
        _mm256_store_si256(reinterpret_cast<__m256i*>(sc_b), sc);
        _mm256_store_si256(reinterpret_cast<__m256i*>(mn_b), mn);
        for (int j = 0; j < 4; ++j) {
            std::memcpy(&out.sc[4 * half + j][row0], sc_b + 8 * j, kGroupRows);
            std::memcpy(&out.mn[4 * half + j][row0], mn_b + 8 * j, kGroupRows);
        }
    }
}

// Eight rows (one group) in 256-bit registers.
struct K4Lanes8 {
    static constexpr int kRows = 8;
    using I = __m256i;
    using F = __m256;
#if FLUORO_DOT_VNNI
    static constexpr int kTile = 8;
#else
    static constexpr int kTile = 4;
#endif
    static I zero() {
        return _mm256_setzero_si256();
    }
    static F zerof() {
        return _mm256_setzero_ps();
    }
    static I chunk(const BlockQ4_Kx8* const* w, int g, int c) {
        return load256(w[0]->qs[g][c]);
    }
    static I nibbles(I q, int h) {
        const I m4 = _mm256_set1_epi8(0x0F);
        return h ? _mm256_and_si256(_mm256_srli_epi16(q, 4), m4) : _mm256_and_si256(q, m4);
    }
    static I bcast(const int8_t* p) {
        return _mm256_set1_epi32(bytes4(p));
    }
    static I bcast32(const void* p) {
        int32_t v;
        std::memcpy(&v, p, sizeof(v));
        return _mm256_set1_epi32(v);
    }
    // S += the 4 products of each lane (int32 with VNNI, two int16 pairs without).
    static I dot(I s, I w, I x) {
#if FLUORO_DOT_VNNI
        return _mm256_dpbusd_epi32(s, w, x);
#else
        return _mm256_add_epi16(s, _mm256_maddubs_epi16(w, x));
#endif
    }
    // sc_r · S_r per lane, int32.
    static I scaled(I s, const uint8_t* sc) {
        const I sc32 = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc)));
#if FLUORO_DOT_VNNI
        return _mm256_mullo_epi32(s, sc32);
#else
        return _mm256_madd_epi16(s, _mm256_or_si256(sc32, _mm256_slli_epi32(sc32, 16)));
#endif
    }
    // Lane r: (m[r], m_next[r]) as int16.
    static I min_pairs(const uint8_t* m, const uint8_t* m_next) {
        const __m128i a = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(m));
        const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(m_next));
        return _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(a, b));
    }
    static I madd(I a, I b) {
        return _mm256_madd_epi16(a, b);
    }
    static I add(I a, I b) {
        return _mm256_add_epi32(a, b);
    }
    static F to_f(I v) {
        return _mm256_cvtepi32_ps(v);
    }
    // For Q6_K: 32 bytes of the group's rows; 6-bit quants q = (ql >> 4·nib & 15) | (qh >> sh & 3)
    // << 4; S += the 4 products of each lane in int32 (4 · 2 · 63 · 128 would overflow AVX2's
    // int16 pair sums by the third chunk, so each widens at once); sc_r · S_r for signed scales;
    // lane r's (sc[r], sc_next[r]) as int16.
    static I rows(const uint8_t* const* p) {
        return load256(p[0]);
    }
    static I q6(I ql, I qh, int nib, int sh) {
        const I m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x03);
        const I lo = _mm256_and_si256(nib ? _mm256_srli_epi16(ql, 4) : ql, m4);
        const I hi = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(sh)), m2);
        return _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
    }
    static I dot32(I s, I w, I x) {
#if FLUORO_DOT_VNNI
        return _mm256_dpbusd_epi32(s, w, x);
#else
        return _mm256_add_epi32(
            s, _mm256_madd_epi16(_mm256_maddubs_epi16(w, x), _mm256_set1_epi16(1)));
#endif
    }
    static I scaled_i8(I s, const int8_t* sc) {
        return _mm256_mullo_epi32(
            s, _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc))));
    }
    static I pairs_i8(const int8_t* a, const int8_t* b) {
        return _mm256_cvtepi8_epi16(
            _mm_unpacklo_epi8(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(a)),
                              _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b))));
    }
    static F fp16x(const uint16_t* const* h) {
        return _mm256_cvtph_ps(load128(h[0]));
    }
    static F mul(F a, F b) {
        return _mm256_mul_ps(a, b);
    }
    static F set1(float v) {
        return _mm256_set1_ps(v);
    }
    static F fmadd(F a, F b, F c) {
        return _mm256_fmadd_ps(a, b, c);
    }
    static F fnmadd(F a, F b, F c) {
        return _mm256_fnmadd_ps(a, b, c);
    }
    static void store(float* out, F v) {
        _mm256_storeu_ps(out, v);
    }
};

#if FLUORO_DOT_VNNI
// Two adjacent groups' sixteen rows in 512-bit registers. (The masked widenings with every lane
// selected: GCC 12's unmasked ones pass an undefined register, see join().)
struct K4Lanes16 {
    static constexpr int kRows = 16;
    static constexpr int kTile = 8;
    using I = __m512i;
    using F = __m512;
    static I zero() { return _mm512_setzero_si512(); }
    static F zerof() { return _mm512_setzero_ps(); }
    static I chunk(const BlockQ4_Kx8* const* w, int g, int c) {
        return join(load256(w[0]->qs[g][c]), load256(w[1]->qs[g][c]));
    }
    static I nibbles(I q, int h) {
        const I m4 = _mm512_set1_epi8(0x0F);
        return h ? _mm512_and_si512(_mm512_srli_epi16(q, 4), m4) : _mm512_and_si512(q, m4);
    }
    static I bcast(const int8_t* p) { return _mm512_set1_epi32(bytes4(p)); }
    static I bcast32(const void* p) {
        int32_t v;
        std::memcpy(&v, p, sizeof(v));
        return _mm512_set1_epi32(v);
    }
    static I dot(I s, I w, I x) { return _mm512_dpbusd_epi32(s, w, x); }
    static I scaled(I s, const uint8_t* sc) {
        return _mm512_mullo_epi32(s, _mm512_maskz_cvtepu8_epi32(0xFFFF, load128(sc)));
    }
    static I min_pairs(const uint8_t* m, const uint8_t* m_next) {
        const __m128i a = load128(m), b = load128(m_next);
        const __m256i ab = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_unpacklo_epi8(a, b)),
                                                   _mm_unpackhi_epi8(a, b), 1);
        return _mm512_maskz_cvtepu8_epi16(0xFFFFFFFF, ab);
    }
    static I madd(I a, I b) { return _mm512_madd_epi16(a, b); }
    static I add(I a, I b) { return _mm512_add_epi32(a, b); }
    static F to_f(I v) { return to_float(v); }
    static I rows(const uint8_t* const* p) { return join(load256(p[0]), load256(p[1])); }
    static I q6(I ql, I qh, int nib, int sh) {
        const I m4 = _mm512_set1_epi8(0x0F), m2 = _mm512_set1_epi8(0x03);
        const I lo = _mm512_and_si512(nib ? _mm512_srli_epi16(ql, 4) : ql, m4);
        const I hi = _mm512_and_si512(_mm512_srl_epi16(qh, _mm_cvtsi32_si128(sh)), m2);
        return _mm512_or_si512(lo, _mm512_slli_epi16(hi, 4));
    }
    static I dot32(I s, I w, I x) { return _mm512_dpbusd_epi32(s, w, x); }
    static I scaled_i8(I s, const int8_t* sc) {
        return _mm512_mullo_epi32(s, _mm512_maskz_cvtepi8_epi32(0xFFFF, load128(sc)));
    }
    static I pairs_i8(const int8_t* a, const int8_t* b) {
        const __m128i x = load128(a), y = load128(b);
        const __m256i ab = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_unpacklo_epi8(x, y)),
                                                   _mm_unpackhi_epi8(x, y), 1);
        return _mm512_maskz_cvtepi8_epi16(0xFFFFFFFF, ab);
    }
    static F fp16x(const uint16_t* const* h) {
        const __m256i both =
            _mm256_inserti128_si256(_mm256_castsi128_si256(load128(h[0])), load128(h[1]), 1);
        return _mm512_maskz_cvtph_ps(0xFFFF, both);
    }
    static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
    static F set1(float v) { return _mm512_set1_ps(v); }
    static F fmadd(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
    static F fnmadd(F a, F b, F c) { return _mm512_fnmadd_ps(a, b, c); }
    static void store(float* out, F v) { _mm512_storeu_ps(out, v); }
};
#endif

// NX tokens against L::kRows / 8 adjacent groups (w, then w + n_blocks): out[r * kMaxDotRows + t].
// A tile's accumulators (row order in each register) to out[r * kMaxDotRows + t].
template <class L, int NX>
void store_tile(const typename L::F (&acc)[NX], float* out) {
    for (int t = 0; t < NX; ++t) {
        alignas(64) float v[L::kRows];
        L::store(v, acc[t]);
        for (int r = 0; r < L::kRows; ++r) out[r * kMaxDotRows + t] = v[r];
    }
}

template <class L, int NX>
void q4_k_group_tile(const BlockQ4_Kx8* w, const std::byte* x, size_t x_stride, int64_t n_blocks,
                     float* out) {
    using I = typename L::I;
    using F = typename L::F;
    constexpr int kGroups = L::kRows / kGroupRows;
    const BlockQ8_KWide* xs[NX];
    F acc[NX];
    for (int t = 0; t < NX; ++t) {
        xs[t] = reinterpret_cast<const BlockQ8_KWide*>(x + size_t(t) * x_stride);
        acc[t] = L::zerof();
    }
    for (int64_t b = 0; b < n_blocks; ++b) {
        const BlockQ4_Kx8* blocks[kGroups];
        const uint16_t* d[kGroups];
        const uint16_t* dmin[kGroups];
        K4Scales<L::kRows> s;
        for (int k = 0; k < kGroups; ++k) {
            blocks[k] = w + k * n_blocks + b;
            prefetch_ahead(blocks[k]);
            d[k] = blocks[k]->d;
            dmin[k] = blocks[k]->dmin;
            unpack_k4_scales(*blocks[k], k * kGroupRows, s);
        }
        // The mins: acc -= (dmin · d_x) · Σ_j m_j · bsum32_j.
        const F dm = L::fp16x(dmin);
        I pairs[4];
        for (int k = 0; k < 4; ++k) pairs[k] = L::min_pairs(s.mn[2 * k], s.mn[2 * k + 1]);
        for (int t = 0; t < NX; ++t) {
            I m = L::madd(pairs[0], L::bcast32(xs[t][b].bsum32));
            for (int k = 1; k < 4; ++k)
                m = L::add(m, L::madd(pairs[k], L::bcast32(xs[t][b].bsum32 + 2 * k)));
            acc[t] = L::fnmadd(L::mul(dm, L::set1(xs[t][b].d)), L::to_f(m), acc[t]);
        }
        // The quants: each sub-block's sums, then times its scale.
        I isum[NX];
        for (int t = 0; t < NX; ++t) isum[t] = L::zero();
        for (int g = 0; g < BlockQ4_Kx8::kGroups; ++g) {
            for (int h = 0; h < 2; ++h) {
                I sum[NX];
                for (int t = 0; t < NX; ++t) sum[t] = L::zero();
                for (int c = 0; c < BlockQ4_Kx8::kChunks; ++c) {
                    const I q = L::nibbles(L::chunk(blocks, g, c), h);
                    for (int t = 0; t < NX; ++t)
                        sum[t] = L::dot(sum[t], q, L::bcast(xs[t][b].qs + 64 * g + 32 * h + 4 * c));
                }
                for (int t = 0; t < NX; ++t)
                    isum[t] = L::add(isum[t], L::scaled(sum[t], s.sc[2 * g + h]));
            }
        }
        const F dd = L::fp16x(d);
        for (int t = 0; t < NX; ++t)
            acc[t] = L::fmadd(L::mul(dd, L::set1(xs[t][b].d)), L::to_f(isum[t]), acc[t]);
    }
    store_tile<L, NX>(acc, out);
}

// ---- Q6_K (BlockQ6_Kx8) against Q8_K ----
// Per super-block and token, exact integers: isum = Σ_j sc_j · S_j over the 16 sub-blocks of 16
// (|.| <= 16 · 128 · 16 · 63 · 128 < 2^31) and msum = Σ_j sc_j · bsums_j (the Q8_K block's own
// 16-element sums), then acc -= (d · 32 d_x) · msum; acc += (d · d_x) · isum, since
// w = d · sc · (q - 32).
template <class L, int NX>
void q6_k_group_tile(const BlockQ6_Kx8* w, const std::byte* x, size_t x_stride, int64_t n_blocks,
                     float* out) {
    using I = typename L::I;
    using F = typename L::F;
    constexpr int kGroups = L::kRows / kGroupRows;
    const BlockQ8_K* xs[NX];
    F acc[NX];
    for (int t = 0; t < NX; ++t) {
        xs[t] = reinterpret_cast<const BlockQ8_K*>(x + size_t(t) * x_stride);
        acc[t] = L::zerof();
    }
    for (int64_t b = 0; b < n_blocks; ++b) {
        const BlockQ6_Kx8* blocks[kGroups];
        const uint16_t* d[kGroups];
        alignas(32) int8_t sc[16][L::kRows];
        for (int k = 0; k < kGroups; ++k) {
            blocks[k] = w + k * n_blocks + b;
            prefetch_ahead(blocks[k]);
            d[k] = blocks[k]->d;
            for (int j = 0; j < 16; ++j)
                std::memcpy(&sc[j][k * kGroupRows], blocks[k]->sc[j], kGroupRows);
        }
        const F dd = L::fp16x(d);
        I pairs[8];
        for (int k = 0; k < 8; ++k) pairs[k] = L::pairs_i8(sc[2 * k], sc[2 * k + 1]);
        for (int t = 0; t < NX; ++t) {
            I m = L::madd(pairs[0], L::bcast32(xs[t][b].bsums));
            for (int k = 1; k < 8; ++k)
                m = L::add(m, L::madd(pairs[k], L::bcast32(xs[t][b].bsums + 2 * k)));
            acc[t] = L::fnmadd(L::mul(dd, L::set1(32.0f * xs[t][b].d)), L::to_f(m), acc[t]);
        }
        I isum[NX];
        for (int t = 0; t < NX; ++t) isum[t] = L::zero();
        for (int n = 0; n < 2; ++n) {
            for (int run = 0; run < 4; ++run) {         // elements 128n + 32·run + 0..31
                for (int half = 0; half < 2; ++half) {  // sub-block 8n + 2·run + half
                    I sum[NX];
                    for (int t = 0; t < NX; ++t) sum[t] = L::zero();
                    for (int c = 4 * half; c < 4 * half + 4; ++c) {
                        const uint8_t* ql[kGroups];
                        const uint8_t* qh[kGroups];
                        for (int k = 0; k < kGroups; ++k) {
                            ql[k] = blocks[k]->ql[n][run % 2][c];
                            qh[k] = blocks[k]->qh[n][c];
                        }
                        const I q = L::q6(L::rows(ql), L::rows(qh), run / 2, 2 * run);
                        for (int t = 0; t < NX; ++t)
                            sum[t] = L::dot32(sum[t], q,
                                              L::bcast(xs[t][b].qs + 128 * n + 32 * run + 4 * c));
                    }
                    for (int t = 0; t < NX; ++t)
                        isum[t] = L::add(isum[t], L::scaled_i8(sum[t], sc[8 * n + 2 * run + half]));
                }
            }
        }
        for (int t = 0; t < NX; ++t)
            acc[t] = L::fmadd(L::mul(dd, L::set1(xs[t][b].d)), L::to_f(isum[t]), acc[t]);
    }
    store_tile<L, NX>(acc, out);
}

// ---- the group loop, both types ----

struct Q4_KGroups {
    using Block = BlockQ4_Kx8;
    template <class L, int NX>
    static void tile(const Block* w, const std::byte* x, size_t x_stride, int64_t nb, float* out) {
        q4_k_group_tile<L, NX>(w, x, x_stride, nb, out);
    }
};
struct Q6_KGroups {
    using Block = BlockQ6_Kx8;
    template <class L, int NX>
    static void tile(const Block* w, const std::byte* x, size_t x_stride, int64_t nb, float* out) {
        q6_k_group_tile<L, NX>(w, x, x_stride, nb, out);
    }
};

// RowGroupDotFn for K's groups: one group (K4Lanes8) or two (K4Lanes16).
template <class K, class L>
void k_group_dot(const void* w_group, const void* x, size_t x_stride, int n_x, int64_t n,
                 float* out) {
    const auto* w = static_cast<const typename K::Block*>(w_group);
    const auto* xb = static_cast<const std::byte*>(x);
    const int64_t nb = n / kQK_K;
    for_tiles<L::kTile>(n_x, [&](auto nx, int t0) {
        K::template tile<L, decltype(nx)::value>(w, xb + size_t(t0) * x_stride, x_stride, nb,
                                                 out + t0);
    });
}

inline void set_x86_k_group_kernels(GroupDotTable& table) {
    table[static_cast<size_t>(GgmlType::Q4_K)] = &k_group_dot<Q4_KGroups, K4Lanes8>;
    table[static_cast<size_t>(GgmlType::Q6_K)] = &k_group_dot<Q6_KGroups, K4Lanes8>;
}

#if FLUORO_DOT_VNNI
// One token (decode) runs the two groups one after the other, each one stream from memory, as the
// matmul's row plan wants (two interleaved streams measured slower: Llama-3.2-1B shape at Q4_K_M,
// `fluoro bench -p 0 -n 64`, 2 threads, Zen 5); the bits are the same either way.
template <class K>
void k_group_pair_dot(const void* w_group, const void* x, size_t x_stride, int n_x, int64_t n,
                      float* out) {
    if (n_x > 1) return k_group_dot<K, K4Lanes16>(w_group, x, x_stride, n_x, n, out);
    const auto* w = static_cast<const typename K::Block*>(w_group);
    k_group_dot<K, K4Lanes8>(w, x, x_stride, n_x, n, out);
    k_group_dot<K, K4Lanes8>(w + n / kQK_K, x, x_stride, n_x, n, out + kGroupRows * kMaxDotRows);
}

inline void set_x86_k_group_pair_kernels(GroupDotTable& table) {
    table[static_cast<size_t>(GgmlType::Q4_K)] = &k_group_pair_dot<Q4_KGroups>;
    table[static_cast<size_t>(GgmlType::Q6_K)] = &k_group_pair_dot<Q6_KGroups>;
}
#endif

}  // namespace x86
}  // namespace
}  // namespace fluoro::cpu::detail
