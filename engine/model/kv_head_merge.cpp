#include "model/kv_head_merge.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <map>
#include <memory>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "model/architecture.h"
#include "model/convert_math.h"
#include "model/hparams.h"

namespace fluoro {
namespace {

using cd = std::complex<double>;

// The architectures whose attention reads plain attn_k / attn_v projections per KV head, with
// nothing sized by the KV head count besides them (olmo2/olmoe normalise the whole K projection,
// phi3 may stack Q, K and V, gpt-oss has sinks per query head only but its own layout).
constexpr std::array<std::string_view, 6> kArchs = {"llama",   "qwen2",    "qwen3",
                                                    "granite", "mistral3", "smollm3"};

// The alternation stops when no alignment moves by more than kSettled, when a round gains less
// than kGain of the heads' squared norm (the values' rounds cost a polar factor each), or after
// kMaxRounds.
constexpr double kSettled = 1e-10;
constexpr int kMaxRounds = 60;
constexpr double kGain = 1e-6;

// One layer's attention tensors (bias pointers null when the file has none).
struct LayerAttn {
    const gguf::TensorInfo *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr;
    const gguf::TensorInfo *qb = nullptr, *kb = nullptr, *vb = nullptr;
};

struct Shape {
    int64_t d = 0, n_head = 0, nkv = 0, hd_k = 0, hd_v = 0, factor = 0, n_rot = 0;
    RopeMode mode = RopeMode::Norm;
    // Rows of a key head forming rotary pair i.
    std::pair<int64_t, int64_t> pair_rows(int64_t i) const {
        return mode == RopeMode::Norm ? std::pair{2 * i, 2 * i + 1} : std::pair{i, i + n_rot / 2};
    }
};

// Squared error and squared norm, summed: the merged head's miss.
struct Miss {
    double err = 0, norm = 0;
    double share() const { return norm > 0 ? err / norm : 0.0; }
    void add(const Miss& o) {
        err += o.err;
        norm += o.norm;
    }
};

// The group's heads (members m = 0..F-1, KV heads g*F + m), each `rows` rows of w = d + 1 (the
// bias last), as Grams in the metric: gram(k, l)[i * rows + j] = head_k row i · C · head_l row j.
struct HeadGrams {
    int64_t F = 0, rows = 0;
    std::vector<std::vector<double>> g;  // F x F blocks of rows x rows
    const std::vector<double>& at(int64_t k, int64_t l) const { return g[size_t(k * F + l)]; }
    HeadGrams(const std::vector<std::vector<double>>& heads, int64_t n, int64_t w,
              const std::vector<double>* metric)
        : F(int64_t(heads.size())), rows(n), g(size_t(F * F)) {
        std::vector<double> hc(static_cast<size_t>(n * w));
        for (int64_t k = 0; k < F; ++k) {
            const std::vector<double>& hk = heads[size_t(k)];
            if (metric) {  // head_k C, once
                std::fill(hc.begin(), hc.end(), 0.0);
                for (int64_t i = 0; i < n; ++i)
                    for (int64_t x = 0; x < w; ++x) {
                        const double u = hk[size_t(i * w + x)];
                        if (u == 0) continue;
                        const double* row = metric->data() + x * w;
                        double* out = hc.data() + i * w;
                        for (int64_t y = 0; y < w; ++y) out[y] += u * row[y];
                    }
            }
            const double* left = metric ? hc.data() : hk.data();
            for (int64_t l = 0; l < F; ++l) {
                std::vector<double>& b = g[size_t(k * F + l)];
                b.assign(size_t(n * n), 0.0);
                for (int64_t i = 0; i < n; ++i)
                    for (int64_t j = 0; j < n; ++j) {
                        double t = 0;
                        for (int64_t x = 0; x < w; ++x)
                            t += left[i * w + x] * heads[size_t(l)][size_t(j * w + x)];
                        b[size_t(i * n + j)] = t;
                    }
            }
        }
    }
};

// Rotary pair i (rows r0, r1) of the group's key heads as complex rows z_m = row r0 + i row r1:
// gram[k * F + l] = z_k C z_lᴴ, from the heads' Grams.
std::vector<cd> pair_gram(const HeadGrams& g, int64_t r0, int64_t r1) {
    const int64_t F = g.F, n = g.rows;
    std::vector<cd> out(static_cast<size_t>(F * F));
    for (int64_t k = 0; k < F; ++k)
        for (int64_t l = 0; l < F; ++l) {
            const std::vector<double>& b = g.at(k, l);
            const auto at = [&](int64_t i, int64_t j) { return b[size_t(i * n + j)]; };
            // (kr + i ki) C (lr - i li)ᵀ
            out[size_t(k * F + l)] = {at(r0, r0) + at(r1, r1), at(r1, r0) - at(r0, r1)};
        }
    return out;
}

// The miss of heads turned by a[m] and averaged, from their Gram: sum_m |a_m z_m - t|² =
// sum_m g_mm - (1/F) sum_kl a_k conj(a_l) g_kl.
Miss pair_miss(const std::vector<cd>& g, const std::vector<cd>& a) {
    const int64_t F = int64_t(a.size());
    Miss miss;
    cd cross = 0;
    for (int64_t k = 0; k < F; ++k) {
        miss.norm += g[size_t(k * F + k)].real();
        for (int64_t l = 0; l < F; ++l)
            cross += a[size_t(k)] * std::conj(a[size_t(l)]) * g[size_t(k * F + l)];
    }
    miss.err = std::max(0.0, miss.norm - cross.real() / double(F));
    return miss;
}

// The phases that turn each rotary pair of the group's key heads towards the others (all 1 for
// the mean rule): phase[m][i]. Returns the miss of the phases chosen and of the mean's.
std::pair<Miss, Miss> align_keys(const Shape& s, const std::vector<std::vector<double>>& heads,
                                 const std::vector<double>* metric, bool align,
                                 std::vector<std::vector<cd>>& phase) {
    const int64_t F = s.factor;
    const HeadGrams grams(heads, s.hd_k, s.d + 1, metric);
    phase.assign(size_t(F), std::vector<cd>(size_t(s.n_rot / 2), cd(1.0)));
    Miss used, mean;
    std::vector<cd> a(static_cast<size_t>(F));
    // The unit complex that best turns z_m onto sum_k coef_k z_k: the phase of the conjugate of
    // z_m C (sum_k coef_k z_k)ᴴ = sum_k conj(coef_k) g_mk.
    const auto best_turn = [&](const std::vector<cd>& g, int64_t m, const std::vector<cd>& coef) {
        cd c = 0;
        for (int64_t k = 0; k < F; ++k) c += std::conj(coef[size_t(k)]) * g[size_t(m * F + k)];
        return std::abs(c) > 0 ? std::conj(c) / std::abs(c) : a[size_t(m)];
    };
    for (int64_t i = 0; i < s.n_rot / 2; ++i) {
        const auto [r0, r1] = s.pair_rows(i);
        const std::vector<cd> g = pair_gram(grams, r0, r1);
        std::fill(a.begin(), a.end(), cd(1.0));
        const Miss pair_mean = pair_miss(g, a);
        Miss pair = pair_mean;
        if (align) {
            std::vector<cd> onto(static_cast<size_t>(F), cd(0.0));
            onto[0] = 1.0;  // start: each head turned onto head 0
            for (int64_t m = 1; m < F; ++m) a[size_t(m)] = best_turn(g, m, onto);
            for (int round = 0; round < kMaxRounds; ++round) {  // each onto the mean, again
                for (int64_t k = 0; k < F; ++k) onto[size_t(k)] = a[size_t(k)] / double(F);
                double moved = 0;
                for (int64_t m = 0; m < F; ++m) {
                    const cd t = best_turn(g, m, onto);
                    moved = std::max(moved, std::abs(t - a[size_t(m)]));
                    a[size_t(m)] = t;
                }
                if (moved < kSettled) break;
            }
            pair = pair_miss(g, a);
            if (pair.err > pair_mean.err) {  // never worse than the mean
                std::fill(a.begin(), a.end(), cd(1.0));
                pair = pair_mean;
            }
        }
        for (int64_t m = 0; m < F; ++m) phase[size_t(m)][size_t(i)] = a[size_t(m)];
        used.add(pair);
        mean.add(pair_mean);
    }
    for (int64_t r = s.n_rot; r < s.hd_k; ++r) {  // position-free dims: the mean
        Miss dim;
        double cross = 0;
        for (int64_t k = 0; k < F; ++k)
            for (int64_t l = 0; l < F; ++l) {
                const double v = grams.at(k, l)[size_t(r * s.hd_k + r)];
                cross += v;
                if (k == l) dim.norm += v;
            }
        dim.err = std::max(0.0, dim.norm - cross / double(F));
        used.add(dim);
        mean.add(dim);
    }
    return {used, mean};
}

// The mean of the group's key heads with rotary pair i of member m turned by phase[m][i].
std::vector<double> merged_keys(const Shape& s, const std::vector<std::vector<double>>& heads,
                                const std::vector<std::vector<cd>>& phase) {
    const int64_t F = s.factor, w = s.d + 1;
    std::vector<double> merged(static_cast<size_t>(s.hd_k * w), 0.0);
    std::vector<bool> rotary(static_cast<size_t>(s.hd_k), false);
    for (int64_t i = 0; i < s.n_rot / 2; ++i) {
        const auto [r0, r1] = s.pair_rows(i);
        rotary[size_t(r0)] = rotary[size_t(r1)] = true;
        for (int64_t m = 0; m < F; ++m) {
            const cd a = phase[size_t(m)][size_t(i)] / double(F);
            for (int64_t x = 0; x < w; ++x) {
                const cd t = a * cd(heads[size_t(m)][size_t(r0 * w + x)],
                                    heads[size_t(m)][size_t(r1 * w + x)]);
                merged[size_t(r0 * w + x)] += t.real();
                merged[size_t(r1 * w + x)] += t.imag();
            }
        }
    }
    for (int64_t r = 0; r < s.hd_k; ++r)
        if (!rotary[size_t(r)])
            for (int64_t m = 0; m < F; ++m)
                for (int64_t x = 0; x < w; ++x)
                    merged[size_t(r * w + x)] += heads[size_t(m)][size_t(r * w + x)] / double(F);
    return merged;
}

// The orthogonal maps that turn the group's value heads towards each other (the identity for the
// mean rule): rot[m], n x n. Returns the miss of the maps chosen and of the mean's.
std::pair<Miss, Miss> align_values(const Shape& s, const std::vector<std::vector<double>>& heads,
                                   const std::vector<double>* metric, bool align,
                                   std::vector<std::vector<double>>& rot) {
    const int64_t F = s.factor, n = s.hd_v;
    std::vector<double> eye(static_cast<size_t>(n * n), 0.0);
    for (int64_t i = 0; i < n; ++i) eye[size_t(i * n + i)] = 1.0;
    rot.assign(size_t(F), eye);
    const HeadGrams g(heads, n, s.d + 1, metric);
    // sum_m |R_m H_m - M|² = sum_m tr G_mm - (1/F) sum_kl tr(R_k G_kl R_lᵀ), M the mean.
    const auto miss_of = [&] {
        Miss miss;
        double cross = 0;
        for (int64_t k = 0; k < F; ++k) {
            for (int64_t i = 0; i < n; ++i) miss.norm += g.at(k, k)[size_t(i * n + i)];
            for (int64_t l = 0; l < F; ++l) {
                const std::vector<double> t = mat_mul(rot[size_t(k)], g.at(k, l), n);
                for (size_t j = 0; j < t.size(); ++j) cross += t[j] * rot[size_t(l)][j];
            }
        }
        miss.err = std::max(0.0, miss.norm - cross / double(F));
        return miss;
    };
    const Miss mean = miss_of();
    if (!align) return {mean, mean};
    Miss used = mean;
    try {
        // Start: each head onto head 0 (polar(H_0 C H_mᵀ)); then each onto the mean, whose
        // product with head m is (1/F) sum_k R_k G_km.
        for (int64_t m = 1; m < F; ++m) rot[size_t(m)] = orthogonal_polar(g.at(0, m), n);
        used = miss_of();
        for (int round = 0; round < kMaxRounds; ++round) {
            const double last = used.err;
            const std::vector<std::vector<double>> before = rot;
            double moved = 0;
            for (int64_t m = 0; m < F; ++m) {
                std::vector<double> b(static_cast<size_t>(n * n), 0.0);
                for (int64_t k = 0; k < F; ++k) {
                    const std::vector<double> t = mat_mul(before[size_t(k)], g.at(k, m), n);
                    for (size_t j = 0; j < b.size(); ++j) b[j] += t[j];
                }
                rot[size_t(m)] = orthogonal_polar(b, n);
                for (size_t j = 0; j < b.size(); ++j)
                    moved = std::max(moved, std::abs(rot[size_t(m)][j] - before[size_t(m)][j]));
            }
            used = miss_of();
            if (moved < kSettled || last - used.err < kGain * mean.norm) break;
        }
    } catch (const Error&) {  // a head of lower rank than its dims: no unique turn
        used.err = mean.err + 1;
    }
    if (used.err > mean.err) {  // never worse than the mean
        rot.assign(size_t(F), eye);
        used = mean;
    }
    return {used, mean};
}

// The mean of the group's value heads turned by rot[m].
std::vector<double> merged_values(const Shape& s, const std::vector<std::vector<double>>& heads,
                                  const std::vector<std::vector<double>>& rot) {
    const int64_t F = s.factor, w = s.d + 1, n = s.hd_v;
    std::vector<double> merged(static_cast<size_t>(n * w), 0.0);
    for (int64_t m = 0; m < F; ++m)
        for (int64_t i = 0; i < n; ++i)
            for (int64_t k = 0; k < n; ++k) {
                const double r = rot[size_t(m)][size_t(i * n + k)] / double(F);
                if (r == 0) continue;
                for (int64_t x = 0; x < w; ++x)
                    merged[size_t(i * w + x)] += r * heads[size_t(m)][size_t(k * w + x)];
            }
    return merged;
}

// Head j's rows (hd rows of d weights) of a projection plus its bias as column d.
std::vector<double> head_rows(const std::vector<float>& w, const std::vector<float>* bias,
                              int64_t j, int64_t hd, int64_t d) {
    std::vector<double> h(size_t(hd * (d + 1)), 0.0);
    for (int64_t r = 0; r < hd; ++r) {
        for (int64_t x = 0; x < d; ++x)
            h[size_t(r * (d + 1) + x)] = w[size_t((j * hd + r) * d + x)];
        if (bias) h[size_t(r * (d + 1) + d)] = (*bias)[size_t(j * hd + r)];
    }
    return h;
}

}  // namespace

std::string_view kv_merge_rule_name(KvMergeRule r) {
    return r == KvMergeRule::Aligned ? "aligned" : "mean";
}

KvHeadMergeReport merge_kv_heads(const std::filesystem::path& in, const std::filesystem::path& out,
                                 int64_t factor, KvMergeRule rule, const AttnInputGram* calibration,
                                 GgmlType type) {
    std::error_code ec;
    if (std::filesystem::equivalent(in, out, ec))
        throw Error(out.string() + ": the output would overwrite the input");
    const gguf::GgufFile f = gguf::GgufFile::open(in);
    const Hparams hp = read_hparams(f);
    if (std::find(kArchs.begin(), kArchs.end(), hp.arch) == kArchs.end()) {
        std::string list;
        for (std::string_view a : kArchs) list += (list.empty() ? "" : ", ") + std::string(a);
        throw UnsupportedError(f.name() + ": architecture '" + hp.arch +
                               "': merging KV heads is implemented for " + list);
    }
    Shape s;
    s.d = int64_t(hp.n_embd);
    s.n_head = int64_t(hp.n_head[0]);
    s.nkv = int64_t(hp.n_head_kv[0]);
    s.hd_k = int64_t(hp.head_dim_k);
    s.hd_v = int64_t(hp.head_dim_v);
    s.factor = factor;
    for (uint64_t h : hp.n_head_kv)
        if (int64_t(h) != s.nkv)
            throw UnsupportedError(f.name() + ": head_count_kv differs between layers");
    for (uint64_t h : hp.n_head)
        if (int64_t(h) != s.n_head)
            throw UnsupportedError(f.name() + ": head_count differs between layers");
    if (factor < 2 || s.nkv % factor != 0)
        throw Error(f.name() + ": " + std::to_string(s.nkv) +
                    " KV heads cannot be merged in groups of " + std::to_string(factor) +
                    " (the groups must divide them, 2 or more each)");
    const bool align = rule == KvMergeRule::Aligned;
    if (align)
        for (const char* norm : {"blk.0.attn_q_norm.weight", "blk.0.attn_k_norm.weight"})
            if (f.find_tensor(norm))
                throw UnsupportedError(f.name() +
                                       ": the aligned merge turns rotary pairs of the "
                                       "queries and keys, which the per-dim weights of '" +
                                       std::string(norm) +
                                       "' do not commute with; use the mean merge");
    check_calibration(calibration, s.d, int64_t(hp.n_layer), f.name() + ": ");
    const int64_t after = s.nkv / factor;
    KvHeadMergeReport report{hp.arch, int64_t(hp.n_layer), s.nkv, after, 0};
    report.calibrated = calibration != nullptr;

    // Tensors rewritten, by name: F32 values and shape.
    std::map<std::string, std::pair<std::vector<float>, std::vector<uint64_t>>> rewritten;
    const auto find = [&](int64_t il, const std::string& what) {
        return f.find_tensor("blk." + std::to_string(il) + "." + what);
    };
    const std::unique_ptr<Architecture> arch = make_architecture(hp);
    Miss key_used, key_mean, value_used, value_mean;
    for (int64_t il = 0; il < int64_t(hp.n_layer); ++il) {
        LayerAttn L{find(il, "attn_q.weight"), find(il, "attn_k.weight"),
                    find(il, "attn_v.weight"), find(il, "attn_output.weight"),
                    find(il, "attn_q.bias"),   find(il, "attn_k.bias"),
                    find(il, "attn_v.bias")};
        if (!L.k || !L.v || (align && (!L.q || !L.o)))
            throw FormatError(f.name() + ": layer " + std::to_string(il) +
                              " lacks attn_q, attn_k, attn_v or attn_output");
        const auto expect = [&](const gguf::TensorInfo* t, int64_t cols, int64_t rows) {
            if (!t) return std::vector<float>();
            const bool ok = rows == 1 ? t->n_dims == 1 && int64_t(t->ne[0]) == cols
                                      : t->n_dims == 2 && int64_t(t->ne[0]) == cols &&
                                            int64_t(t->ne[1]) == rows;
            if (!ok)
                throw FormatError(
                    f.name() + ": tensor '" + t->name + "' is not " +
                    (rows == 1 ? std::to_string(cols) + " values"
                               : std::to_string(rows) + " rows of " + std::to_string(cols)));
            return tensor_values(f, *t);
        };
        const std::vector<float> k = expect(L.k, s.d, s.nkv * s.hd_k),
                                 v = expect(L.v, s.d, s.nkv * s.hd_v),
                                 kb = expect(L.kb, s.nkv * s.hd_k, 1),
                                 vb = expect(L.vb, s.nkv * s.hd_v, 1);
        const RopeParams rope = arch->layer_rope(il);
        s.mode = rope.mode;
        s.n_rot = std::min(rope.n_rot, s.hd_k) / 2 * 2;
        std::vector<float> mk(size_t(after * s.hd_k * s.d)), mv(size_t(after * s.hd_v * s.d));
        std::vector<float> mkb(size_t(after * s.hd_k)), mvb(size_t(after * s.hd_v));
        // Per KV head of the file: the phase of each rotary pair, the value rotation.
        std::vector<std::vector<cd>> phase(size_t(s.nkv));
        std::vector<std::vector<double>> rot(size_t(s.nkv));
        for (int64_t g = 0; g < after; ++g) {
            std::vector<std::vector<double>> kh, vh;
            for (int64_t m = 0; m < factor; ++m) {
                kh.push_back(head_rows(k, L.kb ? &kb : nullptr, g * factor + m, s.hd_k, s.d));
                vh.push_back(head_rows(v, L.vb ? &vb : nullptr, g * factor + m, s.hd_v, s.d));
            }
            std::vector<std::vector<cd>> gp;
            std::vector<std::vector<double>> gr;
            const std::vector<double>* metric =
                calibration ? &calibration->layers[size_t(il)] : nullptr;
            const auto [ku, kmean] = align_keys(s, kh, metric, align, gp);
            const auto [vu, vmean] = align_values(s, vh, metric, align, gr);
            key_used.add(ku);
            key_mean.add(kmean);
            value_used.add(vu);
            value_mean.add(vmean);
            const std::vector<double> km = merged_keys(s, kh, gp), vm = merged_values(s, vh, gr);
            for (int64_t m = 0; m < factor; ++m) {
                phase[size_t(g * factor + m)] = gp[size_t(m)];
                rot[size_t(g * factor + m)] = gr[size_t(m)];
            }
            const auto put = [&](const std::vector<double>& src, int64_t hd, std::vector<float>& w,
                                 std::vector<float>& b) {
                for (int64_t r = 0; r < hd; ++r) {
                    for (int64_t x = 0; x < s.d; ++x)
                        w[size_t((g * hd + r) * s.d + x)] = float(src[size_t(r * (s.d + 1) + x)]);
                    b[size_t(g * hd + r)] = float(src[size_t(r * (s.d + 1) + s.d)]);
                }
            };
            put(km, s.hd_k, mk, mkb);
            put(vm, s.hd_v, mv, mvb);
        }
        rewritten[L.k->name] = {mk, {uint64_t(s.d), uint64_t(after * s.hd_k)}};
        rewritten[L.v->name] = {mv, {uint64_t(s.d), uint64_t(after * s.hd_v)}};
        if (L.kb) rewritten[L.kb->name] = {mkb, {uint64_t(after * s.hd_k)}};
        if (L.vb) rewritten[L.vb->name] = {mvb, {uint64_t(after * s.hd_v)}};
        report.tensors_merged += 2 + (L.kb != nullptr) + (L.vb != nullptr);
        if (!align) continue;
        // Each query head turns its pairs as its KV head's keys did; attn_output's columns of
        // each query head take the inverse (the transpose) of its KV head's value rotation.
        const int64_t per_kv = s.n_head / s.nkv;
        std::vector<float> q = expect(L.q, s.d, s.n_head * s.hd_k);
        std::vector<float> qb = expect(L.qb, s.n_head * s.hd_k, 1);
        std::vector<float> o = expect(L.o, s.n_head * s.hd_v, s.d);
        for (int64_t h = 0; h < s.n_head; ++h) {
            const int64_t j = h / per_kv;
            for (int64_t i = 0; i < s.n_rot / 2; ++i) {
                const auto [r0, r1] = s.pair_rows(i);
                const cd a = phase[size_t(j)][size_t(i)];
                const auto turn = [&](float& re, float& im) {
                    const cd z = a * cd(re, im);
                    re = float(z.real());
                    im = float(z.imag());
                };
                for (int64_t x = 0; x < s.d; ++x)
                    turn(q[size_t((h * s.hd_k + r0) * s.d + x)],
                         q[size_t((h * s.hd_k + r1) * s.d + x)]);
                if (L.qb) turn(qb[size_t(h * s.hd_k + r0)], qb[size_t(h * s.hd_k + r1)]);
            }
            const std::vector<double>& r = rot[size_t(j)];
            const int64_t n = s.hd_v, row = s.n_head * s.hd_v;
            std::vector<double> block(static_cast<size_t>(n));
            for (int64_t y = 0; y < s.d; ++y) {
                float* col = o.data() + y * row + h * n;
                for (int64_t i = 0; i < n; ++i) {
                    double t = 0;
                    for (int64_t c = 0; c < n; ++c) t += double(col[c]) * r[size_t(i * n + c)];
                    block[size_t(i)] = t;
                }
                for (int64_t i = 0; i < n; ++i) col[i] = float(block[size_t(i)]);
            }
        }
        rewritten[L.q->name] = {q, {uint64_t(s.d), uint64_t(s.n_head * s.hd_k)}};
        if (L.qb) rewritten[L.qb->name] = {qb, {uint64_t(s.n_head * s.hd_k)}};
        rewritten[L.o->name] = {o, {uint64_t(s.n_head * s.hd_v), uint64_t(s.d)}};
    }
    report.key_miss = key_used.share();
    report.value_miss = value_used.share();
    report.key_miss_mean = key_mean.share();
    report.value_miss_mean = value_mean.share();

    gguf::GgufWriter w;
    w.set_alignment(f.alignment());
    const std::string kv_key = hp.arch + ".attention.head_count_kv";
    for (const gguf::KeyValue& kv : f.metadata()) {
        if (kv.key == "general.alignment") continue;
        if (kv.key == kv_key) {
            w.add_u32(kv.key, uint32_t(after));
            continue;
        }
        if (kv.key == "general.name") {
            const std::string name = f.get_string("general.name").value_or("");
            w.add_string(kv.key, name + " (" + std::to_string(s.nkv) + " KV heads merged to " +
                                     std::to_string(after) +
                                     (align ? " aligned, then averaged)" : " by their mean)"));
            continue;
        }
        w.add(kv.key, kv.value);
    }
    for (const gguf::TensorInfo& t : f.tensors()) {
        if (const auto it = rewritten.find(t.name); it != rewritten.end()) {
            add_converted_tensor(w, t.name, it->second.second, it->second.first, type);
            continue;
        }
        w.add_tensor(t.name, t.type, std::vector<uint64_t>(t.ne.begin(), t.ne.begin() + t.n_dims),
                     f.tensor_data(t));
    }
    w.write(out);
    return report;
}

}  // namespace fluoro
