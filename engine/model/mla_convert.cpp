#include "model/mla_convert.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "model/convert_math.h"
#include "model/hparams.h"
#include "tensor/ggml_type.h"

namespace fluoro {
namespace {

struct LayerTensors {
    const gguf::TensorInfo *q = nullptr, *k = nullptr, *v = nullptr;
};

}  // namespace

MlaConvertReport convert_to_mla(const std::filesystem::path& in, const std::filesystem::path& out,
                                const MlaConvertOptions& opt) {
    std::error_code ec;
    if (std::filesystem::equivalent(in, out, ec))
        throw Error(out.string() + ": the output would overwrite the input");
    const gguf::GgufFile f = gguf::GgufFile::open(in);
    const Hparams hp = read_hparams(f);
    const std::string where = f.name() + ": ";
    if (hp.arch != "llama")
        throw UnsupportedError(where + "architecture '" + hp.arch +
                               "': conversion to MLA is implemented for llama");
    const int64_t nl = int64_t(hp.n_layer), d = int64_t(hp.n_embd), nh = int64_t(hp.n_head[0]),
                  nkv = int64_t(hp.n_head_kv[0]), hd = int64_t(hp.head_dim_k);
    for (int64_t il = 0; il < nl; ++il)
        if (int64_t(hp.n_head[size_t(il)]) != nh || int64_t(hp.n_head_kv[size_t(il)]) != nkv)
            throw UnsupportedError(where + "head counts differ between layers");
    if (int64_t(hp.head_dim_v) != hd)
        throw UnsupportedError(where + "key and value head sizes differ");
    if (int64_t(hp.n_rot) != hd)
        throw UnsupportedError(where + "rope.dimension_count (" + std::to_string(hp.n_rot) +
                               ") is not the head size (" + std::to_string(hd) +
                               "): partial rotary files are not converted");
    if (hp.rope_freq_scale != 1.0 || hp.yarn_ext_factor != 0.0)
        throw UnsupportedError(where + "rope scaling (" + hp.rope_scaling_type +
                               ") is not converted: deepseek2 ties it to its score scale");
    const int64_t pairs = hd / 2, p = opt.rope_pairs;
    if (p < 1 || p >= pairs)
        throw Error(where + "rope pairs " + std::to_string(p) + ": a head of " +
                    std::to_string(hd) + " dims has " + std::to_string(pairs) +
                    " pairs; keep 1 to " + std::to_string(pairs - 1) +
                    " (deepseek2 needs at least one position-free dim)");
    const int64_t nope = hd - 2 * p, rd = nkv * 2 * p, kh = nope + rd, m = nkv * (nope + hd);
    if (opt.rank < 1 || opt.rank > std::min(m, d))
        throw Error(where + "rank " + std::to_string(opt.rank) + ": the latent of " +
                    std::to_string(nkv) + " KV heads' " + std::to_string(nope) +
                    " position-free key dims and " + std::to_string(hd) +
                    " value dims can have 1 to " + std::to_string(std::min(m, d)) + " dims");
    if (!opt.pair_scores.empty() &&
        (int64_t(opt.pair_scores.size()) != nl ||
         std::any_of(opt.pair_scores.begin(), opt.pair_scores.end(),
                     [&](const auto& s) { return int64_t(s.size()) != nkv * pairs; })))
        throw Error(where + "calibration scores are not " + std::to_string(nl) + " layers x " +
                    std::to_string(nkv * pairs) + " pairs");
    const int64_t r = opt.rank, group = nh / nkv;

    std::vector<LayerTensors> layers(static_cast<size_t>(nl));
    std::vector<float> ff_orig(size_t(pairs), 1.0f);
    for (const gguf::TensorInfo& t : f.tensors()) {
        const std::string_view name = t.name;
        if (name == "rope_freqs.weight") {
            if (t.n_dims != 1 || int64_t(t.ne[0]) != pairs)
                throw FormatError(where + "tensor 'rope_freqs.weight' is not " +
                                  std::to_string(pairs) + " values");
            ff_orig = tensor_values(f, t);
            continue;
        }
        if (!name.starts_with("blk.")) continue;
        const size_t dot = name.find('.', 4);
        const int64_t il = std::atoll(std::string(name.substr(4, dot - 4)).c_str());
        const std::string_view rest = name.substr(dot + 1);
        if (rest.starts_with("attn_q.bias") || rest.starts_with("attn_k.bias") ||
            rest.starts_with("attn_v.bias") || rest.starts_with("attn_qkv"))
            throw UnsupportedError(where + "tensor '" + t.name +
                                   "': biased or fused Q/K/V projections are not converted");
        if (il < 0 || il >= nl) continue;
        if (rest == "attn_q.weight") layers[size_t(il)].q = &t;
        if (rest == "attn_k.weight") layers[size_t(il)].k = &t;
        if (rest == "attn_v.weight") layers[size_t(il)].v = &t;
    }

    gguf::GgufWriter w;
    w.set_alignment(f.alignment());
    for (const gguf::KeyValue& kv : f.metadata()) {
        if (kv.key == "general.alignment") continue;
        if (kv.key == "general.architecture") {
            w.add_string(kv.key, "deepseek2");
            continue;
        }
        if (kv.key == "general.name") {
            w.add_string(kv.key, f.get_string("general.name").value_or("") + " (MLA: rank " +
                                     std::to_string(r) + ", " + std::to_string(p) +
                                     " rotary pairs per KV head; training-free)");
            continue;
        }
        if (kv.key.starts_with("llama.")) {
            const std::string sub = kv.key.substr(6);
            if (sub == "attention.head_count_kv" || sub == "rope.dimension_count" ||
                sub == "attention.key_length" || sub == "attention.value_length")
                continue;
            w.add("deepseek2." + sub, kv.value);
            continue;
        }
        w.add(kv.key, kv.value);
    }
    w.add_u32("deepseek2.attention.kv_lora_rank", uint32_t(r));
    w.add_u32("deepseek2.attention.key_length", uint32_t(kh));
    w.add_u32("deepseek2.attention.value_length", uint32_t(hd));
    w.add_u32("deepseek2.rope.dimension_count", uint32_t(rd));
    w.add_u32("deepseek2.leading_dense_block_count", uint32_t(nl));

    for (const gguf::TensorInfo& t : f.tensors()) {
        const std::string_view name = t.name;
        if (name == "rope_freqs.weight" || name.ends_with(".attn_q.weight") ||
            name.ends_with(".attn_k.weight") || name.ends_with(".attn_v.weight"))
            continue;
        w.add_tensor(t.name, t.type, std::vector<uint64_t>(t.ne.begin(), t.ne.begin() + t.n_dims),
                     f.tensor_data(t));
    }

    // The rope block's pair i = g * p + k is KV head g's kept pair j = kept[g][k]. The file has
    // one rope_freqs for every layer, so the pairs are chosen once, by their scores summed over
    // the layers (MHA2MLA chooses per layer; a per-layer choice would need per-layer factors).
    std::vector<double> score(size_t(nkv * pairs), 0.0);
    MlaConvertReport report;
    report.layers = nl;
    report.rank = r;
    report.rope_dims = rd;
    report.nope_dims = nope;
    report.kv_elements_before = 2 * nkv * hd;
    report.kv_elements_after = rd + r;
    report.calibrated = !opt.pair_scores.empty() || opt.calibration != nullptr;
    const AttnInputGram* cal = opt.calibration;
    check_calibration(cal, d, nl, where);
    // row C rowᵀ over the input dims (the calibration's Gram without its constant column: these
    // projections have no bias), or row rowᵀ without one: the squared RMS the row produces.
    const auto squared = [&](const float* row, int64_t il) {
        double s = 0;
        if (!cal) {
            for (int64_t c = 0; c < d; ++c) s += double(row[c]) * double(row[c]);
            return s;
        }
        const std::vector<double>& C = cal->layers[size_t(il)];
        for (int64_t a = 0; a < d; ++a) {
            double t = 0;
            for (int64_t c = 0; c < d; ++c) t += C[size_t(a * (d + 1) + c)] * double(row[c]);
            s += double(row[a]) * t;
        }
        return s;
    };
    std::vector<std::vector<float>> qs(static_cast<size_t>(nl)), ks(static_cast<size_t>(nl)),
        vs(static_cast<size_t>(nl));
    for (int64_t il = 0; il < nl; ++il) {
        const LayerTensors& L = layers[size_t(il)];
        if (!L.q || !L.k || !L.v)
            throw FormatError(where + "layer " + std::to_string(il) +
                              " lacks attn_q, attn_k or attn_v");
        auto check = [&](const gguf::TensorInfo& t, int64_t rows) {
            if (t.n_dims != 2 || int64_t(t.ne[0]) != d || int64_t(t.ne[1]) != rows)
                throw FormatError(where + "tensor '" + t.name + "' is not " + std::to_string(d) +
                                  " x " + std::to_string(rows));
        };
        check(*L.q, nh * hd);
        check(*L.k, nkv * hd);
        check(*L.v, nkv * hd);
        qs[size_t(il)] = tensor_values(f, *L.q);
        ks[size_t(il)] = tensor_values(f, *L.k);
        vs[size_t(il)] = tensor_values(f, *L.v);
        for (int64_t g = 0; g < nkv; ++g)
            for (int64_t j = 0; j < pairs; ++j) {
                double s = 0;
                if (!opt.pair_scores.empty()) {
                    s = opt.pair_scores[size_t(il)][size_t(g * pairs + j)];
                } else if (opt.pair_rule == MlaPairRule::HighFrequency) {
                    s = double(pairs - j);  // pair 0 turns fastest
                } else {
                    // The pair's 2-norm: of its weights, or its RMS on the calibration text.
                    auto norm = [&](const std::vector<float>& m_, int64_t row0) {
                        double n2 = 0;
                        for (int64_t rr = row0; rr < row0 + 2; ++rr) {
                            const float* row = m_.data() + rr * d;
                            n2 += squared(row, il);
                        }
                        return std::sqrt(std::max(0.0, n2));
                    };
                    const double kn = norm(ks[size_t(il)], g * hd + 2 * j);
                    for (int64_t h = g * group; h < (g + 1) * group; ++h)
                        s += norm(qs[size_t(il)], h * hd + 2 * j) * kn;
                }
                score[size_t(g * pairs + j)] += s;
            }
    }
    // kept[g]: the p pairs with the highest summed score (ties: the faster pair), ascending.
    std::vector<std::vector<int64_t>> kept(static_cast<size_t>(nkv));
    std::vector<std::vector<int64_t>> free_dims(
        static_cast<size_t>(nkv));  // a head's NoPE dims, ascending
    for (int64_t g = 0; g < nkv; ++g) {
        std::vector<int64_t> order(static_cast<size_t>(pairs));
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
            return score[size_t(g * pairs + a)] > score[size_t(g * pairs + b)];
        });
        kept[size_t(g)].assign(order.begin(), order.begin() + p);
        std::sort(kept[size_t(g)].begin(), kept[size_t(g)].end());
        for (int64_t j = 0; j < pairs; ++j)
            if (!std::binary_search(kept[size_t(g)].begin(), kept[size_t(g)].end(), j)) {
                free_dims[size_t(g)].push_back(2 * j);
                free_dims[size_t(g)].push_back(2 * j + 1);
            }
    }
    // rope_freqs: pair i of the rope block turns at original pair j's angle:
    // base^(-2i/rd) / ff_i = base^(-2j/hd) / ff_orig_j.
    std::vector<float> ff(size_t(rd / 2));
    const double base = hp.rope_freq_base;
    for (int64_t g = 0; g < nkv; ++g)
        for (int64_t k = 0; k < p; ++k) {
            const int64_t i = g * p + k, j = kept[size_t(g)][size_t(k)];
            ff[size_t(i)] =
                float(double(ff_orig[size_t(j)]) *
                      std::pow(base, 2.0 * double(j) / double(hd) - 2.0 * double(i) / double(rd)));
        }
    w.add_tensor_f32("rope_freqs.weight", {uint64_t(rd / 2)}, ff);

    const double q_scale = std::sqrt(double(kh) / double(hd));
    double energy_sum = 0;
    for (int64_t il = 0; il < nl; ++il) {
        const std::string layer = "blk." + std::to_string(il) + ".";
        const std::vector<float>&Q = qs[size_t(il)], &K = ks[size_t(il)], &V = vs[size_t(il)];
        // attn_q: per head [NoPE rows, then the rope block: its group's kept pairs, zeros else].
        std::vector<float> q(size_t(nh * kh * d), 0.0f);
        for (int64_t h = 0; h < nh; ++h) {
            const int64_t g = h / group;
            auto put = [&](int64_t dst_row, int64_t src_dim) {
                for (int64_t c = 0; c < d; ++c)
                    q[size_t((h * kh + dst_row) * d + c)] =
                        float(double(Q[size_t((h * hd + src_dim) * d + c)]) * q_scale);
            };
            for (int64_t i = 0; i < nope; ++i) put(i, free_dims[size_t(g)][size_t(i)]);
            for (int64_t k = 0; k < p; ++k) {
                const int64_t j = kept[size_t(g)][size_t(k)];
                put(nope + g * 2 * p + 2 * k, 2 * j);
                put(nope + g * 2 * p + 2 * k + 1, 2 * j + 1);
            }
        }
        // W: every KV head's NoPE key rows, then every KV head's value rows (m x d), in double.
        std::vector<double> W(size_t(m * d));
        for (int64_t g = 0; g < nkv; ++g) {
            for (int64_t i = 0; i < nope; ++i)
                for (int64_t c = 0; c < d; ++c)
                    W[size_t((g * nope + i) * d + c)] =
                        K[size_t((g * hd + free_dims[size_t(g)][size_t(i)]) * d + c)];
            for (int64_t i = 0; i < hd; ++i)
                for (int64_t c = 0; c < d; ++c)
                    W[size_t((nkv * nope + g * hd + i) * d + c)] = V[size_t((g * hd + i) * d + c)];
        }
        // G = W C Wᵀ (W Wᵀ uncalibrated): its top eigenvectors span the best rank-r fit of the
        // keys and values on the calibration text (of the weights without one).
        std::vector<double> WC = W;
        if (cal) {
            const std::vector<double>& C = cal->layers[size_t(il)];
            for (int64_t a = 0; a < m; ++a)
                for (int64_t c = 0; c < d; ++c) {
                    double t = 0;
                    for (int64_t e = 0; e < d; ++e)
                        t += W[size_t(a * d + e)] * C[size_t(e * (d + 1) + c)];
                    WC[size_t(a * d + c)] = t;
                }
        }
        std::vector<double> G(size_t(m * m), 0.0);
        for (int64_t a = 0; a < m; ++a)
            for (int64_t b = a; b < m; ++b) {
                double s = 0;
                for (int64_t c = 0; c < d; ++c) s += WC[size_t(a * d + c)] * W[size_t(b * d + c)];
                G[size_t(a * m + b)] = G[size_t(b * m + a)] = s;
            }
        const auto [values, U] = symmetric_eigen(G, m);
        double all = 0, top = 0;
        for (int64_t i = 0; i < m; ++i) {
            all += std::max(0.0, values[size_t(i)]);
            if (i < r) top += std::max(0.0, values[size_t(i)]);
        }
        const double energy = all > 0 ? top / all : 1.0;
        report.energy_min = il == 0 ? energy : std::min(report.energy_min, energy);
        energy_sum += energy;
        // attn_kv_a_mqa: the latent rows Uᵀ W (r), then the shared RoPE key (rd): each KV
        // head's kept pairs in its block.
        std::vector<float> kva(size_t((r + rd) * d), 0.0f);
        for (int64_t i = 0; i < r; ++i)
            for (int64_t c = 0; c < d; ++c) {
                double s = 0;
                for (int64_t a = 0; a < m; ++a) s += U[size_t(a * m + i)] * W[size_t(a * d + c)];
                kva[size_t(i * d + c)] = float(s);
            }
        for (int64_t g = 0; g < nkv; ++g)
            for (int64_t k = 0; k < p; ++k)
                for (int64_t e = 0; e < 2; ++e) {
                    const int64_t j = kept[size_t(g)][size_t(k)];
                    for (int64_t c = 0; c < d; ++c)
                        kva[size_t((r + g * 2 * p + 2 * k + e) * d + c)] =
                            K[size_t((g * hd + 2 * j + e) * d + c)];
                }
        // attn_kv_b {r, nh * (nope + hd)}: per head its group's rows of U, NoPE key then value.
        std::vector<float> kvb(size_t(nh * (nope + hd) * r));
        for (int64_t h = 0; h < nh; ++h) {
            const int64_t g = h / group;
            for (int64_t i = 0; i < nope + hd; ++i) {
                const int64_t a = i < nope ? g * nope + i : nkv * nope + g * hd + (i - nope);
                for (int64_t c = 0; c < r; ++c)
                    kvb[size_t((h * (nope + hd) + i) * r + c)] = float(U[size_t(a * m + c)]);
            }
        }
        add_converted_tensor(w, layer + "attn_q.weight", {uint64_t(d), uint64_t(nh * kh)}, q,
                             opt.type);
        add_converted_tensor(w, layer + "attn_kv_a_mqa.weight", {uint64_t(d), uint64_t(r + rd)},
                             kva, opt.type);
        add_converted_tensor(w, layer + "attn_kv_b.weight",
                             {uint64_t(r), uint64_t(nh * (nope + hd))}, kvb, opt.type);
    }
    report.energy_mean = nl > 0 ? energy_sum / double(nl) : 1.0;
    w.write(out);
    return report;
}

}  // namespace fluoro
