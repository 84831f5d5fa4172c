// CUDA attention over the paged KV cache: kv_store, one tiled FlashAttention kernel that serves
// both prefill (a tile of consecutive query rows of one sequence) and decode (one row, the key
// range split across blocks), a log-sum-exp merge of split partials, and attention_probs.
//
// Design (first version: correctness first, plain FMA from shared memory, no tensor cores):
//  - One kernel, attn_kernel. A block owns Q = rows x gb query vectors (rows consecutive tokens
//    of one sequence, gb query heads of one KV head's group) and one split chunk of the union of
//    their key ranges. It walks that chunk in tiles of kTile = 32 keys: the tile's pool rows are
//    looked up once, K and V (converted to f32) are staged in shared memory, scores for all Q x 32
//    pairs are computed (masked per query), an online softmax per query (one warp per query,
//    one key per lane) updates the running max / sum and rescales, then each thread updates the
//    accumulator entries (query, d) it owns (in registers: Q * head_dim_v <= 256 * 16).
//  - split == 1: the block divides by the sum and writes out and lse itself. split > 1: it
//    writes (m, l, unnormalized acc) partials to scratch and merge_kernel combines them.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstdint>
#include <string>

#include "backend/cuda/cuda_attention.h"
#include "backend/cuda/cuda_check.h"
#include "core/error.h"

namespace fluoro::cuda {
namespace {

constexpr int kThreads = 256;  // threads of attn_kernel
constexpr int kWarps = kThreads / 32;
constexpr int kTile = 32;           // keys per tile (the softmax step gives one key per lane)
constexpr int kAccPerThread = 16;   // accumulator entries per thread: Q * dv <= 4096
constexpr int kMaxQueries = 64;     // Q = rows * gb
constexpr int kMaxRows = 16;        // query rows (tokens) per block
constexpr int kMinSplitKeys = 128;  // never split a key range into chunks shorter than this
constexpr int kMaxHeadDim = 256;
constexpr float kNegInf = -INFINITY;

static_assert(kTile == 32, "the softmax step maps one key of a tile to one lane");

struct AttnParams {
    const std::byte* k;
    const std::byte* v;
    int64_t k_row_bytes;
    int64_t v_row_bytes;
    const int32_t* pos;
    const int32_t* seq;
    const int32_t* tables;
    int64_t table_pitch;
    int64_t bt;
    int64_t n_tok;
    const float* q;
    float* out;
    float* lse;
    float* part;  // split > 1: ((t * n_head + h) * split + c) * (2 + dv): m, l, acc[dv]
    int n_head;
    int group;    // n_head / n_head_kv
    int gb;       // query heads per block (of the group)
    int gchunks;  // ceil(group / gb)
    int rows;     // query tokens per block
    int dk;
    int dv;
    int window;
    float scale;
    float softcap;
    int split;
    bool vec_k;  // 16-byte loads are aligned
    bool vec_v;
};

__device__ __forceinline__ float to_float(float x) {
    return x;
}
__device__ __forceinline__ float to_float(__half x) {
    return __half2float(x);
}

template <typename E>
__device__ __forceinline__ E from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) {
    return x;
}
template <>
__device__ __forceinline__ __half from_float<__half>(float x) {
    return __float2half_rn(x);
}

__device__ __forceinline__ float warp_max(float x) {
    for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
    return x;
}
__device__ __forceinline__ float warp_sum(float x) {
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}

// score after scale and soft-capping (the CPU order)
__device__ __forceinline__ float finish_score(float dot, float scale, float softcap) {
    float s = dot * scale;
    if (softcap > 0.0f) s = softcap * tanhf(s / softcap);
    return s;
}

// Stages `dim` elements of head `head_off` (in elements) of the kTile pool rows rows_s[] into
// dst (row j at dst + j * ld) as f32; rows_s[j] < 0 gives zeros (never NaN from stale memory).
template <typename E>
__device__ void load_tile(const std::byte* base, int64_t row_bytes, int head_off, int dim, int ld,
                          const int* rows_s, float* dst, bool vec) {
    if (vec) {
        constexpr int kVec = 16 / int(sizeof(E));
        const int per_row = dim / kVec;
        for (int i = threadIdx.x; i < kTile * per_row; i += kThreads) {
            const int j = i / per_row, c = i % per_row;
            const int row = rows_s[j];
            float* o = dst + j * ld + c * kVec;
            if (row < 0) {
#pragma unroll
                for (int e = 0; e < kVec; ++e) o[e] = 0.0f;
                continue;
            }
            const uint4 raw =
                *reinterpret_cast<const uint4*>(base + int64_t(row) * row_bytes +
                                                int64_t(head_off + c * kVec) * int64_t(sizeof(E)));
            const E* ev = reinterpret_cast<const E*>(&raw);
#pragma unroll
            for (int e = 0; e < kVec; ++e) o[e] = to_float(ev[e]);
        }
    } else {
        for (int i = threadIdx.x; i < kTile * dim; i += kThreads) {
            const int j = i / dim, d = i % dim;
            const int row = rows_s[j];
            float x = 0.0f;
            if (row >= 0) {
                const E* src = reinterpret_cast<const E*>(base + int64_t(row) * row_bytes);
                x = to_float(src[head_off + d]);
            }
            dst[j * ld + d] = x;
        }
    }
}

template <typename E>
__global__ void __launch_bounds__(kThreads) attn_kernel(const AttnParams p) {
    extern __shared__ float smem[];
    const int Q = p.rows * p.gb;
    const int dk = p.dk, dv = p.dv;
    const int ldk = dk + 1;          // padded: lanes of a warp read 32 different keys at the same d
    float* q_s = smem;               // Q x dk
    float* k_s = q_s + Q * dk;       // kTile x ldk
    float* v_s = k_s + kTile * ldk;  // kTile x dv
    float* s_s = v_s + kTile * dv;   // Q x kTile: scores, then probabilities
    float* m_s = s_s + Q * kTile;    // Q running max
    float* l_s = m_s + Q;            // Q running sum
    float* a_s = l_s + Q;            // Q rescale factor of the current tile
    int* rows_s = reinterpret_cast<int*>(a_s + Q);  // kTile pool rows (-1: outside the chunk)
    int* qpos_s = rows_s + kTile;                   // rows: position of each query row (-1: none)
    __shared__ int range_s[3];                      // chunk begin, chunk end, sequence

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int64_t t0 = int64_t(blockIdx.x) * p.rows;
    const int kvh = int(blockIdx.y) / p.gchunks;
    const int g0 = (int(blockIdx.y) % p.gchunks) * p.gb;
    const int c = int(blockIdx.z);

    if (tid == 0) {
        int lo = INT_MAX, hi = -1;
        for (int r = 0; r < p.rows; ++r) {
            const int64_t t = t0 + r;
            int ps = -1;
            if (t < p.n_tok) {
                ps = p.pos[t];
                const int first = p.window > 0 ? max(0, ps - p.window + 1) : 0;
                lo = min(lo, first);
                hi = max(hi, ps);
            }
            qpos_s[r] = ps;
        }
        int kbeg = 0, kend = 0;
        if (hi >= 0 && lo <= hi) {
            const int64_t count = int64_t(hi) - lo + 1;
            int64_t chunk = (count + p.split - 1) / p.split;
            chunk = (chunk + kTile - 1) / kTile * kTile;
            const int64_t b = lo + min(count, int64_t(c) * chunk);
            const int64_t e = min(int64_t(hi) + 1, lo + int64_t(c + 1) * chunk);
            kbeg = int(b);
            kend = int(max(b, e));
        }
        range_s[0] = kbeg;
        range_s[1] = kend;
        range_s[2] = p.seq[t0];
    }
    for (int i = tid; i < Q * dk; i += kThreads) {
        const int qi = i / dk, d = i % dk;
        const int r = qi / p.gb, g = qi % p.gb;
        const int64_t t = t0 + r;
        float x = 0.0f;
        if (t < p.n_tok && g0 + g < p.group) {
            const int64_t h = int64_t(kvh) * p.group + g0 + g;
            x = p.q[(t * p.n_head + h) * dk + d];
        }
        q_s[i] = x;
    }
    for (int i = tid; i < Q; i += kThreads) {
        m_s[i] = kNegInf;
        l_s[i] = 0.0f;
        a_s[i] = 1.0f;
    }
    __syncthreads();

    float acc[kAccPerThread];
#pragma unroll
    for (int i = 0; i < kAccPerThread; ++i) acc[i] = 0.0f;
    const int QD = Q * dv;
    const int kbeg = range_s[0], kend = range_s[1];
    const int32_t* table = p.tables + int64_t(range_s[2]) * p.table_pitch;

    for (int kt = kbeg; kt < kend; kt += kTile) {
        // 1. pool rows of the tile's keys (all threads are past the previous tile's step 5)
        if (tid < kTile) {
            const int key = kt + tid;
            int row = -1;
            if (key < kend) row = int(int64_t(table[key / p.bt]) * p.bt + key % p.bt);
            rows_s[tid] = row;
        }
        __syncthreads();
        // 2. K and V tiles to shared memory
        load_tile<E>(p.k, p.k_row_bytes, kvh * dk, dk, ldk, rows_s, k_s, p.vec_k);
        load_tile<E>(p.v, p.v_row_bytes, kvh * dv, dv, dv, rows_s, v_s, p.vec_v);
        __syncthreads();
        // 3. scores, -inf where masked for that query (or outside the chunk)
        for (int i = tid; i < Q * kTile; i += kThreads) {
            const int qi = i / kTile, j = i % kTile;
            const int key = kt + j;
            const int ps = qpos_s[qi / p.gb];
            const bool ok = key < kend && key <= ps && (p.window <= 0 || key > ps - p.window);
            float s = kNegInf;
            if (ok) {
                const float* qv = q_s + qi * dk;
                const float* kv = k_s + j * ldk;
                float dot = 0.0f;
                for (int d = 0; d < dk; ++d) dot = fmaf(qv[d], kv[d], dot);
                s = finish_score(dot, p.scale, p.softcap);
            }
            s_s[i] = s;
        }
        __syncthreads();
        // 4. online softmax: one warp per query, one key per lane
        for (int qi = warp; qi < Q; qi += kWarps) {
            const float s = s_s[qi * kTile + lane];
            const float m_old = m_s[qi];
            const float m_new = fmaxf(m_old, warp_max(s));
            float pj = 0.0f, alpha = 1.0f;
            if (m_new != kNegInf) {  // else nothing seen yet: keep acc (0) and l (0)
                pj = expf(s - m_new);
                alpha = expf(m_old - m_new);  // m_old = -inf gives 0
            }
            s_s[qi * kTile + lane] = pj;
            const float sum = warp_sum(pj);
            if (lane == 0) {
                l_s[qi] = l_s[qi] * alpha + sum;
                m_s[qi] = m_new;
                a_s[qi] = alpha;
            }
        }
        __syncthreads();
        // 5. acc = acc * alpha + P V for the (query, d) entries this thread owns
#pragma unroll
        for (int i = 0; i < kAccPerThread; ++i) {
            const int idx = tid + i * kThreads;
            if (idx < QD) {
                const int qi = idx / dv, d = idx % dv;
                const float* pr = s_s + qi * kTile;
                float a = acc[i] * a_s[qi];
#pragma unroll 8
                for (int j = 0; j < kTile; ++j) a = fmaf(pr[j], v_s[j * dv + d], a);
                acc[i] = a;
            }
        }
    }

    // m_s / l_s were last written before a barrier (step 4 or the initialization).
    const int64_t pf = 2 + int64_t(dv);
#pragma unroll
    for (int i = 0; i < kAccPerThread; ++i) {
        const int idx = tid + i * kThreads;
        if (idx < QD) {
            const int qi = idx / dv, d = idx % dv;
            const int r = qi / p.gb, g = qi % p.gb;
            const int64_t t = t0 + r;
            if (t < p.n_tok && g0 + g < p.group) {
                const int64_t h = int64_t(kvh) * p.group + g0 + g;
                if (p.split == 1) {
                    const float l = l_s[qi];
                    p.out[(t * p.n_head + h) * dv + d] = l > 0.0f ? acc[i] / l : 0.0f;
                } else {
                    p.part[((t * p.n_head + h) * p.split + c) * pf + 2 + d] = acc[i];
                }
            }
        }
    }
    for (int qi = tid; qi < Q; qi += kThreads) {
        const int r = qi / p.gb, g = qi % p.gb;
        const int64_t t = t0 + r;
        if (t >= p.n_tok || g0 + g >= p.group) continue;
        const int64_t h = int64_t(kvh) * p.group + g0 + g;
        const float m = m_s[qi], l = l_s[qi];
        if (p.split == 1) {
            if (p.lse != nullptr) p.lse[t * p.n_head + h] = l > 0.0f ? m + logf(l) : kNegInf;
        } else {
            float* o = p.part + ((t * p.n_head + h) * p.split + c) * pf;
            o[0] = m;
            o[1] = l;
        }
    }
}

// One block per (token, head) row: combines the split partials by their log-sum-exp.
__global__ void merge_kernel(const float* __restrict__ part, int split, int dv,
                             float* __restrict__ out, float* __restrict__ lse) {
    const int64_t row = blockIdx.x;  // t * n_head + h
    const int64_t pf = 2 + int64_t(dv);
    const float* pr = part + row * split * pf;
    float M = kNegInf;
    for (int c = 0; c < split; ++c) M = fmaxf(M, pr[c * pf]);
    float L = 0.0f;
    if (M != kNegInf)
        for (int c = 0; c < split; ++c) {
            const float m = pr[c * pf];
            if (m != kNegInf) L += pr[c * pf + 1] * expf(m - M);
        }
    for (int d = threadIdx.x; d < dv; d += blockDim.x) {
        float a = 0.0f;
        if (L > 0.0f)
            for (int c = 0; c < split; ++c) {
                const float m = pr[c * pf];
                if (m != kNegInf) a += expf(m - M) * pr[c * pf + 2 + d];
            }
        out[row * dv + d] = L > 0.0f ? a / L : 0.0f;
    }
    if (threadIdx.x == 0 && lse != nullptr) lse[row] = L > 0.0f ? M + logf(L) : kNegInf;
}

// ---- Decode: few query tokens, each against its whole key range ----------------------------
// The tiled kernel above stages 32 keys in shared memory and needs five barriers per tile; with
// one query token a block has too little work to hide that (23 us for 1k keys, measured on an
// H200). attn_decode_kernel is the flash-decoding form instead: a block owns one token, one KV
// head (all its group's query heads) and one split chunk; each of its 4 warps walks its own
// 32-key tiles with no barrier: lane j scores key j against the group's queries (q broadcast from
// shared memory), the warp updates its running max/sum per head, then lanes own dv/32 output
// dimensions and accumulate the 32 V rows (probabilities shuffled from their lanes). The warps'
// states are merged once at the end, in shared memory; output as the tiled kernel's (final, or
// split partials for merge_kernel).
constexpr int kDecWarps = 4;
constexpr int kDecThreads = 32 * kDecWarps;
constexpr int kDecMaxGroup = 8;

template <int kN>
struct HalfVec;  // kN consecutive __half as one load
template <>
struct HalfVec<2> {
    using T = __half2;
};
template <>
struct HalfVec<4> {
    using T = uint2;
};
template <>
struct HalfVec<8> {
    using T = uint4;
};

template <int kN>
__device__ __forceinline__ void load_halves(const __half* src, float* dst) {
    const typename HalfVec<kN>::T raw = *reinterpret_cast<const typename HalfVec<kN>::T*>(src);
    const __half* h = reinterpret_cast<const __half*>(&raw);
#pragma unroll
    for (int e = 0; e < kN; ++e) dst[e] = __half2float(h[e]);
}

template <int kD>
__global__ void __launch_bounds__(kDecThreads) attn_decode_kernel(const AttnParams p) {
    constexpr int kPer = kD / 32;  // output dimensions per lane
    __shared__ float q_s[kDecMaxGroup][kD];
    __shared__ float m_w[kDecWarps][kDecMaxGroup], l_w[kDecWarps][kDecMaxGroup];
    __shared__ float acc_w[kDecWarps][kDecMaxGroup][kD];

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int64_t t = blockIdx.x;
    const int kvh = int(blockIdx.y) / p.gchunks;
    const int h0 = kvh * p.group + (int(blockIdx.y) % p.gchunks) * p.gb;  // first query head
    const int c = int(blockIdx.z);
    const int G = p.gb;  // query heads of this block

    for (int i = tid; i < G * kD; i += kDecThreads) {
        const int g = i / kD, d = i % kD;
        q_s[g][d] = p.q[(t * p.n_head + h0 + g) * kD + d];
    }
    const int ps = p.pos[t];
    const int lo = p.window > 0 ? max(0, ps - p.window + 1) : 0;
    const int64_t count = int64_t(ps) - lo + 1;
    int64_t chunk = (count + p.split - 1) / p.split;
    chunk = (chunk + 31) / 32 * 32;
    const int64_t kbeg64 = lo + min(count, int64_t(c) * chunk);
    const int kbeg = int(kbeg64);
    const int kend = int(max(kbeg64, min(int64_t(ps) + 1, lo + int64_t(c + 1) * chunk)));
    const int32_t* table = p.tables + int64_t(p.seq[t]) * p.table_pitch;
    __syncthreads();

    float m[kDecMaxGroup], l[kDecMaxGroup], acc[kDecMaxGroup][kPer];
#pragma unroll
    for (int g = 0; g < kDecMaxGroup; ++g) {
        m[g] = kNegInf;
        l[g] = 0.0f;
#pragma unroll
        for (int e = 0; e < kPer; ++e) acc[g][e] = 0.0f;
    }

    for (int kt = kbeg + warp * 32; kt < kend; kt += kDecWarps * 32) {
        const int key = kt + lane;
        const bool valid = key < kend;
        const int64_t row = valid ? int64_t(table[key / p.bt]) * p.bt + key % p.bt : 0;
        // scores: lane = key
        float dot[kDecMaxGroup];
#pragma unroll
        for (int g = 0; g < kDecMaxGroup; ++g) dot[g] = 0.0f;
        if (valid) {
            const __half* kr =
                reinterpret_cast<const __half*>(p.k + row * p.k_row_bytes) + int64_t(kvh) * kD;
#pragma unroll 4
            for (int d0 = 0; d0 < kD; d0 += 8) {
                float kf[8];
                load_halves<8>(kr + d0, kf);
#pragma unroll
                for (int g = 0; g < kDecMaxGroup; ++g) {
                    if (g < G) {
#pragma unroll
                        for (int e = 0; e < 8; ++e) dot[g] = fmaf(q_s[g][d0 + e], kf[e], dot[g]);
                    }
                }
            }
        }
        // online softmax per query head; pr[g] = this lane's key's weight
        float pr[kDecMaxGroup];
#pragma unroll
        for (int g = 0; g < kDecMaxGroup; ++g) {
            pr[g] = 0.0f;
            if (g < G) {
                const float sc = valid ? finish_score(dot[g], p.scale, p.softcap) : kNegInf;
                const float m_new = fmaxf(m[g], warp_max(sc));
                float alpha = 1.0f;
                if (m_new != kNegInf) {
                    pr[g] = expf(sc - m_new);
                    alpha = expf(m[g] - m_new);
                }
                l[g] = l[g] * alpha + warp_sum(pr[g]);
                m[g] = m_new;
#pragma unroll
                for (int e = 0; e < kPer; ++e) acc[g][e] *= alpha;
            }
        }
        // P V: lane owns dimensions lane * kPer ..
        // Eight V rows are loaded before any is used, so their latencies overlap (one row at a
        // time left the loop waiting on memory 32 times per tile). Rows past kend repeat the
        // last valid row with weight 0 (pr is 0 there): no stale-memory NaN enters.
        const int n_valid = min(32, kend - kt);
        constexpr int kBatch = 8;
        for (int j0 = 0; j0 < n_valid; j0 += kBatch) {
            float vf[kBatch][kPer];
#pragma unroll
            for (int u = 0; u < kBatch; ++u) {
                const int j = min(j0 + u, n_valid - 1);
                const int64_t rj = __shfl_sync(0xffffffffu, row, j);
                load_halves<kPer>(reinterpret_cast<const __half*>(p.v + rj * p.v_row_bytes) +
                                      int64_t(kvh) * kD + lane * kPer,
                                  vf[u]);
            }
#pragma unroll
            for (int u = 0; u < kBatch; ++u) {
                const bool in = j0 + u < n_valid;
#pragma unroll
                for (int g = 0; g < kDecMaxGroup; ++g) {
                    const float pj = __shfl_sync(0xffffffffu, pr[g], (j0 + u) & 31);
                    if (g < G && in) {
#pragma unroll
                        for (int e = 0; e < kPer; ++e) acc[g][e] = fmaf(pj, vf[u][e], acc[g][e]);
                    }
                }
            }
        }
    }

    // merge the warps' states
#pragma unroll
    for (int g = 0; g < kDecMaxGroup; ++g) {
        if (g < G) {
            if (lane == 0) {
                m_w[warp][g] = m[g];
                l_w[warp][g] = l[g];
            }
#pragma unroll
            for (int e = 0; e < kPer; ++e) acc_w[warp][g][lane * kPer + e] = acc[g][e];
        }
    }
    __syncthreads();
    const int64_t pf = 2 + int64_t(kD);
    for (int i = tid; i < G * kD; i += kDecThreads) {
        const int g = i / kD, d = i % kD;
        float M = kNegInf;
#pragma unroll
        for (int w = 0; w < kDecWarps; ++w) M = fmaxf(M, m_w[w][g]);
        float L = 0.0f, A = 0.0f;
        if (M != kNegInf) {
#pragma unroll
            for (int w = 0; w < kDecWarps; ++w) {
                if (m_w[w][g] == kNegInf) continue;
                const float f = expf(m_w[w][g] - M);
                L += l_w[w][g] * f;
                A += acc_w[w][g][d] * f;
            }
        }
        const int64_t h = h0 + g;
        if (p.split == 1) {
            p.out[(t * p.n_head + h) * kD + d] = L > 0.0f ? A / L : 0.0f;
            if (d == 0 && p.lse != nullptr)
                p.lse[t * p.n_head + h] = L > 0.0f ? M + logf(L) : kNegInf;
        } else {
            float* o = p.part + ((t * p.n_head + h) * p.split + c) * pf;
            o[2 + d] = A;
            if (d == 0) {
                o[0] = M;
                o[1] = L;
            }
        }
    }
}

// Whether attn_decode_kernel serves this call: few tokens, f16 rows aligned for vector loads,
// equal K/V head sizes of 64, 128 or 256, a group of at most kDecMaxGroup query heads.
bool use_decode_kernel(const AttnParams& p, KvElem elem) {
    return p.n_tok <= 4 && elem == KvElem::F16 && p.vec_k && p.vec_v && p.dk == p.dv &&
           (p.dk == 64 || p.dk == 128 || p.dk == 256) && p.group <= kDecMaxGroup;
}

// blockIdx.y 0 stores K, 1 stores V (one launch for both: at decode each is a few hundred
// elements and the launch, not the copy, is the cost).
struct KvStoreSide {
    const float* src;
    std::byte* dst;
    int64_t row_bytes;
    int64_t width;
};

template <typename E>
__global__ void kv_store_kernel(KvStoreSide k, KvStoreSide v, const int32_t* __restrict__ slot_row,
                                int64_t n_tok) {
    const KvStoreSide& s = blockIdx.y == 0 ? k : v;
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n_tok * s.width) return;
    const int64_t t = i / s.width, e = i % s.width;
    E* row = reinterpret_cast<E*>(s.dst + int64_t(slot_row[t]) * s.row_bytes);
    row[e] = from_float<E>(s.src[i]);
}

template <typename E>
__global__ void probs_kernel(const std::byte* k, int64_t k_row_bytes, const int32_t* table,
                             int64_t bt, int pos, int window, int head_off, int dk, float scale,
                             float softcap, const float* __restrict__ q_row, float lse_row,
                             int64_t key_begin, int64_t n, float* __restrict__ probs) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int64_t j = key_begin + i;
    const bool ok = j >= 0 && j <= pos && (window <= 0 || j > int64_t(pos) - window);
    float p = 0.0f;
    if (ok) {
        const int64_t row = int64_t(table[j / bt]) * bt + j % bt;
        const E* kr = reinterpret_cast<const E*>(k + row * k_row_bytes) + head_off;
        float dot = 0.0f;
        for (int d = 0; d < dk; ++d) dot = fmaf(q_row[d], to_float(kr[d]), dot);
        p = expf(finish_score(dot, scale, softcap) - lse_row);
    }
    probs[i] = p;
}

std::string str(int64_t x) {
    return std::to_string(x);
}

void validate(const AttnShape& s, const char* what) {
    const std::string where = std::string("cuda attention: ") + what + ": ";
    if (s.n_head <= 0 || s.n_head_kv <= 0 || s.n_head % s.n_head_kv != 0)
        throw Error(where + "n_head " + str(s.n_head) +
                    " is not a positive multiple of n_head_kv " + str(s.n_head_kv));
    if (s.n_head > 65535) throw Error(where + "n_head " + str(s.n_head) + " is too large");
    for (const auto& [name, d] : {std::pair<const char*, int64_t>{"head_dim_k", s.head_dim_k},
                                  std::pair<const char*, int64_t>{"head_dim_v", s.head_dim_v}}) {
        if (d <= 0 || d % 32 != 0 || d > kMaxHeadDim)
            throw Error(where + name + " " + str(d) +
                        " is unsupported (a multiple of 32 up to 256 is)");
    }
    if (s.window < 0 || s.window > INT_MAX)
        throw Error(where + "window " + str(s.window) + " is out of range");
}

template <typename K>
void set_smem_limit(K kernel, size_t bytes, std::atomic<size_t>& done) {
    if (bytes <= 48 * 1024 || bytes <= done.load()) return;
    FLUORO_CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
    done.store(bytes);
}

int sm_count() {
    int dev = 0, n = 0;
    FLUORO_CUDA_CHECK(cudaGetDevice(&dev));
    FLUORO_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
    return std::max(n, 1);
}

int max_smem_optin() {
    int dev = 0, n = 0;
    FLUORO_CUDA_CHECK(cudaGetDevice(&dev));
    FLUORO_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    return n;
}

bool aligned16(const void* ptr, int64_t row_bytes) {
    return reinterpret_cast<uintptr_t>(ptr) % 16 == 0 && row_bytes % 16 == 0;
}

// How run() cuts a batch into blocks.
struct Plan {
    int gb = 1, gchunks = 1, rows = 1, split = 1;
    int64_t row_tiles = 1;
};

Plan make_plan(const AttnShape& s, const AttnBatchDev& b, int sms) {
    Plan pl;
    const int group = int(s.n_head / s.n_head_kv);
    const int dv = int(s.head_dim_v);
    pl.gb = std::min({group, kMaxQueries, kThreads * kAccPerThread / dv});
    pl.gchunks = (group + pl.gb - 1) / pl.gb;
    if (b.same_seq_consecutive) {
        const int by_acc = kThreads * kAccPerThread / (pl.gb * dv);
        pl.rows = std::clamp(std::min(kMaxQueries / pl.gb, by_acc), 1, kMaxRows);
        pl.rows = int(std::min<int64_t>(pl.rows, b.n_tok));
    }
    pl.row_tiles = (b.n_tok + pl.rows - 1) / pl.rows;
    const int64_t base = pl.row_tiles * s.n_head_kv * pl.gchunks;
    int64_t max_keys = int64_t(std::max(b.max_pos, 0)) + 1;
    if (s.window > 0) max_keys = std::min(max_keys, s.window + pl.rows - 1);
    const int64_t target = 2 * int64_t(sms);
    if (base < target) {
        int64_t split = (target + base - 1) / base;
        split = std::min(split, (max_keys + kMinSplitKeys - 1) / kMinSplitKeys);
        split = std::min(split, std::max<int64_t>(1, 2 * target / b.n_tok));  // bounds scratch
        pl.split = int(std::clamp<int64_t>(split, 1, 65535));
    }
    return pl;
}

}  // namespace

void kv_store(const KvLayerDev& layer, const AttnBatchDev& batch, const AttnShape& shape,
              const float* k, const float* v, cudaStream_t stream) {
    validate(shape, "kv_store");
    if (batch.n_tok <= 0) return;
    const int64_t nk = shape.n_head_kv * shape.head_dim_k, nv = shape.n_head_kv * shape.head_dim_v;
    constexpr int kBlock = 256;
    const KvStoreSide ks{k, layer.k, int64_t(layer.k_row_bytes), nk},
        vs{v, layer.v, int64_t(layer.v_row_bytes), nv};
    const dim3 grid(unsigned((batch.n_tok * std::max(nk, nv) + kBlock - 1) / kBlock), 2);
    if (layer.elem == KvElem::F16)
        kv_store_kernel<__half><<<grid, kBlock, 0, stream>>>(ks, vs, batch.slot_row, batch.n_tok);
    else
        kv_store_kernel<float><<<grid, kBlock, 0, stream>>>(ks, vs, batch.slot_row, batch.n_tok);
    FLUORO_CUDA_CHECK(cudaGetLastError());
}

struct Attention::Impl {
    float* scratch = nullptr;
    size_t scratch_floats = 0;
    int sms = 0;
    int smem_optin = 0;

    void ensure_device_info() {
        if (sms == 0) {
            sms = sm_count();
            smem_optin = max_smem_optin();
        }
    }
    void grow(size_t floats) {
        if (floats <= scratch_floats) return;
        if (scratch != nullptr) {
            // The old buffer may still be used by queued work (on any stream).
            FLUORO_CUDA_CHECK(cudaDeviceSynchronize());
            FLUORO_CUDA_CHECK(cudaFree(scratch));
            scratch = nullptr;
            scratch_floats = 0;
        }
        void* ptr = nullptr;
        FLUORO_CUDA_CHECK(cudaMalloc(&ptr, floats * sizeof(float)));
        scratch = static_cast<float*>(ptr);
        scratch_floats = floats;
    }
};

Attention::Attention() : impl_(std::make_unique<Impl>()) {}

Attention::~Attention() {
    if (impl_ && impl_->scratch != nullptr) cudaFree(impl_->scratch);  // no throw
}

void Attention::reserve(int64_t max_tokens, int64_t n_head, int64_t head_dim_v, int64_t max_ctx) {
    if (max_tokens <= 0 || n_head <= 0 || head_dim_v <= 0) return;
    impl_->ensure_device_info();
    // make_plan keeps n_tok * split <= 2 * target and split <= ceil(max_ctx / kMinSplitKeys).
    const int64_t target = 2 * int64_t(impl_->sms);
    const int64_t max_split = std::max<int64_t>(1, (max_ctx + kMinSplitKeys - 1) / kMinSplitKeys);
    if (max_split <= 1) return;  // never splits
    const int64_t rows_splits = std::min(2 * target, max_tokens * max_split);
    impl_->grow(size_t(rows_splits * n_head * (2 + head_dim_v)));
}

size_t Attention::scratch_bytes() const {
    return impl_->scratch_floats * sizeof(float);
}

void Attention::run(const AttnShape& shape, const KvLayerDev& layer, const AttnBatchDev& batch,
                    const float* q, float* out, float* lse, cudaStream_t stream) {
    validate(shape, "run");
    if (batch.n_tok <= 0) return;
    if (batch.block_tokens <= 0)
        throw Error("cuda attention: run: block_tokens " + str(batch.block_tokens) +
                    " must be positive");
    Impl& im = *impl_;
    im.ensure_device_info();
    const Plan pl = make_plan(shape, batch, im.sms);

    AttnParams p{};
    p.k = layer.k;
    p.v = layer.v;
    p.k_row_bytes = int64_t(layer.k_row_bytes);
    p.v_row_bytes = int64_t(layer.v_row_bytes);
    p.pos = batch.pos;
    p.seq = batch.seq;
    p.tables = batch.tables;
    p.table_pitch = batch.table_pitch;
    p.bt = batch.block_tokens;
    p.n_tok = batch.n_tok;
    p.q = q;
    p.out = out;
    p.lse = lse;
    p.n_head = int(shape.n_head);
    p.group = int(shape.n_head / shape.n_head_kv);
    p.gb = pl.gb;
    p.gchunks = pl.gchunks;
    p.rows = pl.rows;
    p.dk = int(shape.head_dim_k);
    p.dv = int(shape.head_dim_v);
    p.window = int(shape.window);
    p.scale = shape.scale;
    p.softcap = shape.softcap;
    p.split = pl.split;
    p.vec_k = aligned16(layer.k, p.k_row_bytes);
    p.vec_v = aligned16(layer.v, p.v_row_bytes);

    if (use_decode_kernel(p, layer.elem)) {
        // One token per block: plan as for tokens of different sequences.
        AttnBatchDev one_row = batch;
        one_row.same_seq_consecutive = false;
        const Plan dp = make_plan(shape, one_row, im.sms);
        p.split = dp.split;
        // Few blocks (short context: no split): one query head per block instead of the whole
        // group, so that more SMs share the work and each lane's dot products are shorter
        // (Gemma 3 at 30 keys ran 26 us in one block of its 4 heads; K/V are read per head,
        // from L2). With blocks enough, the group shares each K/V read.
        p.gb = p.group;
        p.gchunks = 1;
        if (batch.n_tok * shape.n_head_kv * p.split < im.sms / 2 && p.group > 1) {
            p.gb = 1;
            p.gchunks = p.group;
        }
        if (p.split > 1) {
            im.grow(size_t(batch.n_tok) * size_t(shape.n_head) * size_t(p.split) *
                    size_t(2 + shape.head_dim_v));
            p.part = im.scratch;
        }
        const dim3 grid(unsigned(batch.n_tok), unsigned(shape.n_head_kv * p.gchunks),
                        unsigned(p.split));
        if (p.dk == 64)
            attn_decode_kernel<64><<<grid, kDecThreads, 0, stream>>>(p);
        else if (p.dk == 128)
            attn_decode_kernel<128><<<grid, kDecThreads, 0, stream>>>(p);
        else
            attn_decode_kernel<256><<<grid, kDecThreads, 0, stream>>>(p);
        FLUORO_CUDA_CHECK(cudaGetLastError());
        if (p.split > 1) {
            merge_kernel<<<unsigned(batch.n_tok * shape.n_head), 64, 0, stream>>>(
                im.scratch, p.split, p.dv, out, lse);
            FLUORO_CUDA_CHECK(cudaGetLastError());
        }
        return;
    }
    if (pl.split > 1) {
        const size_t need = size_t(batch.n_tok) * size_t(shape.n_head) * size_t(pl.split) *
                            size_t(2 + shape.head_dim_v);
        im.grow(need);
        p.part = im.scratch;
    }

    const int Q = pl.rows * pl.gb;
    const size_t smem =
        sizeof(float) * size_t(Q * p.dk + kTile * (p.dk + 1) + kTile * p.dv + Q * kTile + 3 * Q) +
        sizeof(int) * size_t(kTile + kMaxRows);
    if (smem > size_t(im.smem_optin))
        throw Error("cuda attention: run: needs " + str(int64_t(smem)) +
                    " bytes of shared memory per block, the device allows " + str(im.smem_optin));
    if (shape.n_head_kv * pl.gchunks > 65535 || pl.row_tiles > INT_MAX)
        throw Error("cuda attention: run: grid too large (n_tok " + str(batch.n_tok) +
                    ", n_head_kv " + str(shape.n_head_kv) + ")");
    const dim3 grid(unsigned(pl.row_tiles), unsigned(shape.n_head_kv * pl.gchunks),
                    unsigned(pl.split));
    if (layer.elem == KvElem::F16) {
        static std::atomic<size_t> done{0};
        set_smem_limit(attn_kernel<__half>, smem, done);
        attn_kernel<__half><<<grid, kThreads, smem, stream>>>(p);
    } else {
        static std::atomic<size_t> done{0};
        set_smem_limit(attn_kernel<float>, smem, done);
        attn_kernel<float><<<grid, kThreads, smem, stream>>>(p);
    }
    FLUORO_CUDA_CHECK(cudaGetLastError());
    if (pl.split > 1) {
        merge_kernel<<<unsigned(batch.n_tok * shape.n_head), 64, 0, stream>>>(im.scratch, pl.split,
                                                                              p.dv, out, lse);
        FLUORO_CUDA_CHECK(cudaGetLastError());
    }
}

void attention_probs(const AttnShape& shape, const KvLayerDev& layer, const int32_t* d_table,
                     int64_t block_tokens, int32_t pos, int64_t kv_head, const float* q_row,
                     float lse_row, int64_t key_begin, int64_t key_end, float* probs,
                     cudaStream_t stream) {
    validate(shape, "attention_probs");
    if (kv_head < 0 || kv_head >= shape.n_head_kv)
        throw Error("cuda attention: attention_probs: kv_head " + str(kv_head) +
                    " is outside [0, " + str(shape.n_head_kv) + ")");
    if (block_tokens <= 0)
        throw Error("cuda attention: attention_probs: block_tokens " + str(block_tokens) +
                    " must be positive");
    if (key_begin < 0)
        throw Error("cuda attention: attention_probs: key_begin " + str(key_begin) +
                    " is negative");
    const int64_t n = key_end - key_begin;
    if (n <= 0) return;
    constexpr int kBlock = 128;
    const auto grid = unsigned((n + kBlock - 1) / kBlock);
    const int head_off = int(kv_head * shape.head_dim_k);
    if (layer.elem == KvElem::F16)
        probs_kernel<__half><<<grid, kBlock, 0, stream>>>(
            layer.k, int64_t(layer.k_row_bytes), d_table, block_tokens, pos, int(shape.window),
            head_off, int(shape.head_dim_k), shape.scale, shape.softcap, q_row, lse_row, key_begin,
            n, probs);
    else
        probs_kernel<float><<<grid, kBlock, 0, stream>>>(
            layer.k, int64_t(layer.k_row_bytes), d_table, block_tokens, pos, int(shape.window),
            head_off, int(shape.head_dim_k), shape.scale, shape.softcap, q_row, lse_row, key_begin,
            n, probs);
    FLUORO_CUDA_CHECK(cudaGetLastError());
}

}  // namespace fluoro::cuda
