#include "eval/attention_io.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "core/error.h"

namespace fluoro {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int64_t D = kAttentionIoHeadDim;

double ms_since(Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// Deterministic values in [-1, 1).
std::vector<float> random_matrix(int64_t rows, uint64_t seed) {
    std::vector<float> m(size_t(rows * D));
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (float& x : m) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x = float(double(s >> 40) / double(1ull << 24) * 2.0 - 1.0);
    }
    return m;
}

float dot(const float* a, const float* b) {
    float s = 0;
    for (int64_t d = 0; d < D; ++d) s += a[d] * b[d];
    return s;
}

uint64_t triangle(int64_t n) {
    return uint64_t(n) * uint64_t(n + 1) / 2;
}

AttentionIoPath naive(int64_t n, const float* q, const float* k, const float* v, float* o,
                      float scale) {
    AttentionIoPath p;
    const auto t = Clock::now();
    std::vector<float> s(size_t(n) * size_t(n), 0.0f);  // the whole matrix, as the paper's baseline
    p.extra_bytes = s.size() * sizeof(float);
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j <= i; ++j) s[size_t(i * n + j)] = dot(q + i * D, k + j * D) * scale;
    for (int64_t i = 0; i < n; ++i) {
        float* row = s.data() + i * n;
        const float m = *std::max_element(row, row + i + 1);
        float sum = 0;
        for (int64_t j = 0; j <= i; ++j) sum += row[j] = std::exp(row[j] - m);
        for (int64_t j = 0; j <= i; ++j) row[j] /= sum;
    }
    for (int64_t i = 0; i < n; ++i) {
        float* out = o + i * D;
        std::fill(out, out + D, 0.0f);
        for (int64_t j = 0; j <= i; ++j)
            for (int64_t d = 0; d < D; ++d) out[d] += s[size_t(i * n + j)] * v[j * D + d];
    }
    p.ms = ms_since(t);
    // Scores: written (QKᵀ), read for the max, read and written (exp), read and written (/sum),
    // read (×V): 7 passes over the lower triangle. K and V: each key row once per query.
    p.score_bytes = 7 * triangle(n) * sizeof(float);
    p.kv_bytes = 2 * triangle(n) * D * sizeof(float);
    return p;
}

AttentionIoPath rowwise(int64_t n, const float* q, const float* k, const float* v, float* o,
                        float scale) {
    AttentionIoPath p;
    const auto t = Clock::now();
    std::vector<float> row(static_cast<size_t>(n));
    p.extra_bytes = row.size() * sizeof(float);
    for (int64_t i = 0; i < n; ++i) {
        float m = -INFINITY;
        for (int64_t j = 0; j <= i; ++j)
            m = std::max(m, row[size_t(j)] = dot(q + i * D, k + j * D) * scale);
        float sum = 0;
        for (int64_t j = 0; j <= i; ++j) sum += row[size_t(j)] = std::exp(row[size_t(j)] - m);
        float* out = o + i * D;
        std::fill(out, out + D, 0.0f);
        for (int64_t j = 0; j <= i; ++j) {
            const float w = row[size_t(j)] / sum;
            for (int64_t d = 0; d < D; ++d) out[d] += w * v[j * D + d];
        }
    }
    p.ms = ms_since(t);
    // The row: written, read and written (exp), read (×V): 4 passes, in a buffer of n floats.
    p.score_bytes = 4 * triangle(n) * sizeof(float);
    p.kv_bytes = 2 * triangle(n) * D * sizeof(float);
    return p;
}

AttentionIoPath flash(int64_t n, const float* q, const float* k, const float* v, float* o,
                      float scale) {
    constexpr int64_t BR = kFlashQueryTile, BC = kFlashKeyTile;
    AttentionIoPath p;
    const auto t = Clock::now();
    // Per query of the tile: running max, running sum, accumulator; one tile of scores.
    std::vector<float> m(BR), l(BR), acc(size_t(BR * D)), tile(size_t(BR * BC));
    p.extra_bytes = (m.size() + l.size() + acc.size() + tile.size()) * sizeof(float);
    uint64_t kv_rows = 0;
    for (int64_t i0 = 0; i0 < n; i0 += BR) {
        const int64_t i1 = std::min(n, i0 + BR);
        std::fill(m.begin(), m.end(), -INFINITY);
        std::fill(l.begin(), l.end(), 0.0f);
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (int64_t j0 = 0; j0 < i1; j0 += BC) {  // key tiles up to the tile's last query
            const int64_t j1 = std::min(i1, j0 + BC);
            kv_rows += uint64_t(j1 - j0);  // this K/V tile is read once for the query tile
            for (int64_t i = i0; i < i1; ++i) {
                const int64_t r = i - i0, jn = std::min(j1, i + 1);
                if (jn <= j0) continue;
                float* sc = tile.data() + r * BC;
                float tmax = -INFINITY;
                for (int64_t j = j0; j < jn; ++j)
                    tmax = std::max(tmax, sc[j - j0] = dot(q + i * D, k + j * D) * scale);
                const float mnew = std::max(m[size_t(r)], tmax);
                const float corr = std::exp(m[size_t(r)] - mnew);
                float* a = acc.data() + r * D;
                for (int64_t d = 0; d < D; ++d) a[d] *= corr;
                float add = 0;
                for (int64_t j = j0; j < jn; ++j) {
                    const float w = std::exp(sc[j - j0] - mnew);
                    add += w;
                    for (int64_t d = 0; d < D; ++d) a[d] += w * v[j * D + d];
                }
                l[size_t(r)] = l[size_t(r)] * corr + add;
                m[size_t(r)] = mnew;
            }
        }
        for (int64_t i = i0; i < i1; ++i)
            for (int64_t d = 0; d < D; ++d)
                o[i * D + d] = acc[size_t((i - i0) * D + d)] / l[size_t(i - i0)];
    }
    p.ms = ms_since(t);
    // Scores live in a 16 × 64 tile (4 KiB, registers and L1): written once, read once.
    p.score_bytes = 2 * triangle(n) * sizeof(float);
    p.kv_bytes = 2 * kv_rows * D * sizeof(float);
    return p;
}

float max_diff(const std::vector<float>& a, const std::vector<float>& b) {
    float m = 0;
    for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
    return m;
}

}  // namespace

std::vector<AttentionIoPoint> measure_attention_io(std::span<const int64_t> contexts) {
    std::vector<AttentionIoPoint> out;
    const float scale = 1.0f / std::sqrt(float(D));
    for (const int64_t n : contexts) {
        if (n < 1) throw Error("attention io: context " + std::to_string(n) + " is not positive");
        const std::vector<float> q = random_matrix(n, 1), k = random_matrix(n, 2),
                                 v = random_matrix(n, 3);
        std::vector<float> o1(size_t(n * D)), o2(o1.size()), o3(o1.size());
        AttentionIoPoint p;
        p.n = n;
        p.naive = naive(n, q.data(), k.data(), v.data(), o1.data(), scale);
        p.rowwise = rowwise(n, q.data(), k.data(), v.data(), o2.data(), scale);
        p.flash = flash(n, q.data(), k.data(), v.data(), o3.data(), scale);
        p.max_diff_rowwise = max_diff(o1, o2);
        p.max_diff_flash = max_diff(o1, o3);
        out.push_back(p);
    }
    return out;
}

}  // namespace fluoro
