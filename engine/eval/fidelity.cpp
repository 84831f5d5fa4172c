#include "eval/fidelity.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <thread>

#include "core/error.h"
#include "eval/window_logits.h"
#include "model/arch_gemma3.h"
#include "model/model.h"
#include "tensor/dequantize.h"
#include "tensor/ggml_type.h"

namespace fluoro {
namespace {

template <typename T>
double log_sum_exp(std::span<const T> x) {
    const double max = double(*std::max_element(x.begin(), x.end()));
    double sum = 0.0;
    for (T v : x) sum += std::exp(double(v) - max);
    return max + std::log(sum);
}

template <typename T>
size_t argmax(std::span<const T> x) {
    return size_t(std::max_element(x.begin(), x.end()) - x.begin());
}

// Eight independent partial sums: the compiler keeps them in vector lanes without reordering
// any one sum, so the result is the same on every build.
double dot(const double* a, const double* b, int64_t n) {
    double acc[8] = {};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
    for (; i < n; ++i) acc[0] += a[i] * b[i];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

}  // namespace

double kl_divergence(std::span<const double> ref, std::span<const float> test) {
    if (ref.size() != test.size() || ref.empty())
        throw Error("kl_divergence: distributions of " + std::to_string(ref.size()) + " and " +
                    std::to_string(test.size()) + " entries");
    const double lse_ref = log_sum_exp(ref), lse_test = log_sum_exp(test);
    double kl = 0.0;
    for (size_t v = 0; v < ref.size(); ++v) {
        const double lp = ref[v] - lse_ref;
        kl += std::exp(lp) * (lp - (double(test[v]) - lse_test));
    }
    return std::max(kl, 0.0);  // rounding can leave -1e-17 where the two are equal
}

FidelityStats summarize_fidelity(std::vector<double> kld, const std::vector<bool>& same,
                                 double nll_sum, double nll_ref_sum) {
    FidelityStats s;
    s.tokens = int64_t(kld.size());
    if (kld.empty()) return s;
    double sum = 0.0;
    for (double k : kld) sum += k;
    s.kld_mean = sum / double(kld.size());
    s.kld = kld;
    std::sort(kld.begin(), kld.end());
    s.kld_p99 = kld[size_t(0.99 * double(kld.size() - 1))];
    s.kld_max = kld.back();
    s.top1 = double(std::count(same.begin(), same.end(), true)) / double(kld.size());
    s.ppl = std::exp(nll_sum / double(kld.size()));
    s.ppl_reference = std::exp(nll_ref_sum / double(kld.size()));
    return s;
}

void reference_logits(const Model& model, std::span<const double> hidden, int64_t rows,
                      std::vector<double>& out) {
    const auto& file = model.file();
    const gguf::TensorInfo* w = file.find_tensor("output.weight");
    if (!w) w = file.find_tensor("token_embd.weight");
    if (!w) throw Error("reference_logits: the model has no LM head");
    const int64_t n_embd = int64_t(w->ne[0]), n_vocab = int64_t(w->n_rows());
    if (n_vocab != model.n_vocab() || rows < 0 || int64_t(hidden.size()) != rows * n_embd)
        throw Error("reference_logits: " + std::to_string(hidden.size()) + " hidden values for " +
                    std::to_string(rows) + " rows of " + std::to_string(n_embd) + " (LM head " +
                    std::to_string(n_vocab) + " rows)");
    const Hparams& hp = model.hparams();
    const double scale = hp.logit_scale ? 1.0 / *hp.logit_scale : 1.0;
    const double cap = hp.final_logit_softcap.value_or(
        hp.arch == "gemma2" ? Gemma3Architecture::kGemma2FinalSoftcap : 0.0);
    const std::span<const std::byte> bytes = file.tensor_data(*w);
    const size_t stride = size_t(row_bytes(w->type, uint64_t(n_embd)).value_or(0));
    out.assign(size_t(rows * n_vocab), 0.0);
    auto part = [&](int64_t v0, int64_t v1) {
        std::vector<float> f(static_cast<size_t>(n_embd));
        std::vector<double> d(static_cast<size_t>(n_embd));
        for (int64_t v = v0; v < v1; ++v) {
            dequantize_row(w->type, bytes.data() + size_t(v) * stride, f.data(), n_embd);
            std::copy(f.begin(), f.end(), d.begin());
            for (int64_t r = 0; r < rows; ++r) {
                double l = dot(d.data(), hidden.data() + r * n_embd, n_embd) * scale;
                if (cap > 0) l = cap * std::tanh(l / cap);
                out[size_t(r * n_vocab + v)] = l;
            }
        }
    };
    const int64_t n_threads =
        std::clamp<int64_t>(std::thread::hardware_concurrency(), 1, std::max<int64_t>(1, n_vocab));
    std::vector<std::thread> pool;
    for (int64_t t = 1; t < n_threads; ++t)
        pool.emplace_back(part, n_vocab * t / n_threads, n_vocab * (t + 1) / n_threads);
    part(0, n_vocab / n_threads);
    for (auto& t : pool) t.join();
}

void check_reference_head(const Model& model, const FidelityReference& ref) {
    if (ref.check_ids.empty() || ref.check_ids.size() != ref.check_logits.size())
        throw Error("fidelity: the reference has no check of its LM head");
    std::vector<double> logits;
    reference_logits(model, std::span<const double>(ref.hidden).first(size_t(ref.n_embd)), 1,
                     logits);
    // The file's figures came from the reference's own LM head in float64 over a separate
    // forward pass of the same tokens: they differ from ours by float64 rounding (~1e-12).
    // Another model, a missing scale or soft cap, or a wrong row differ by far more than 1e-6.
    constexpr double kTolerance = 1e-6;
    auto fail = [](const std::string& what, double want, double got) {
        throw Error("fidelity: the reference does not match this model's LM head (" + what +
                    ": reference " + std::to_string(want) + ", recomputed " + std::to_string(got) +
                    "): it was made for another model file");
    };
    for (size_t i = 0; i < ref.check_ids.size(); ++i) {
        const int32_t id = ref.check_ids[i];
        if (id < 0 || id >= model.n_vocab())
            throw Error("fidelity: the reference's check names token " + std::to_string(id) +
                        ", outside the model's vocabulary");
        if (std::abs(logits[size_t(id)] - ref.check_logits[i]) > kTolerance)
            fail("logit of token " + std::to_string(id), ref.check_logits[i], logits[size_t(id)]);
    }
    const double lse = log_sum_exp(std::span<const double>(logits));
    if (std::abs(lse - ref.check_logsumexp) > kTolerance)
        fail("log-sum-exp", ref.check_logsumexp, lse);
}

FidelityStats fidelity(Model& model, KvCache& kv, const FidelityReference& ref,
                       const std::function<void(int64_t, double)>& progress) {
    const int64_t n_ctx = ref.n_ctx, per_window = ref.scored_per_window();
    const int64_t n_vocab = model.n_vocab();
    if (n_ctx < 4 || ref.first_scored < 1 || per_window < 1)
        throw Error("fidelity: the reference's windows (" + std::to_string(n_ctx) +
                    " tokens, scored from " + std::to_string(ref.first_scored) +
                    ") leave nothing to score");
    if (ref.n_embd != int64_t(model.hparams().n_embd))
        throw Error("fidelity: the reference has " + std::to_string(ref.n_embd) +
                    " values per position, the model's embedding has " +
                    std::to_string(model.hparams().n_embd) + ": it was made for another model");
    if (int64_t(ref.hidden.size()) != int64_t(ref.windows.size()) * per_window * ref.n_embd)
        throw Error("fidelity: the reference holds " + std::to_string(ref.hidden.size()) +
                    " values, not " + std::to_string(ref.windows.size()) + " windows x " +
                    std::to_string(per_window) + " positions x " + std::to_string(ref.n_embd));
    if (kv.capacity(0) < n_ctx)
        throw Error("fidelity: the KV cache holds " + std::to_string(kv.capacity(0)) +
                    " tokens, fewer than the reference's windows of " + std::to_string(n_ctx));
    for (size_t w = 0; w < ref.windows.size(); ++w) {
        if (int64_t(ref.windows[w].size()) != n_ctx)
            throw Error("fidelity: window " + std::to_string(w) + " holds " +
                        std::to_string(ref.windows[w].size()) + " tokens, not " +
                        std::to_string(n_ctx));
        for (int32_t t : ref.windows[w])
            if (t < 0 || t >= n_vocab)
                throw Error("fidelity: window " + std::to_string(w) + " holds token " +
                            std::to_string(t) + ", outside the model's vocabulary of " +
                            std::to_string(n_vocab));
    }
    check_reference_head(model, ref);
    const auto start = std::chrono::steady_clock::now();
    std::vector<double> kld;
    std::vector<bool> same;
    double nll_sum = 0.0, nll_ref_sum = 0.0;
    // The engine's logits of one window, then the reference's in blocks of positions (the LM
    // head is read once per block, not once per position).
    constexpr int64_t kBlock = 32;
    std::vector<float> test(size_t(per_window * n_vocab));
    std::vector<double> block;
    for (size_t w = 0; w < ref.windows.size(); ++w) {
        const std::vector<int32_t>& window = ref.windows[w];
        window_logits(model, kv, window, ref.first_scored,
                      [&](int64_t p, std::span<const float> logits) {
                          std::copy(logits.begin(), logits.end(),
                                    test.begin() + (p - ref.first_scored) * n_vocab);
                      });
        for (int64_t b = 0; b < per_window; b += kBlock) {
            const int64_t n = std::min(kBlock, per_window - b);
            const size_t row0 = size_t((int64_t(w) * per_window + b) * ref.n_embd);
            reference_logits(
                model, std::span<const double>(ref.hidden).subspan(row0, size_t(n * ref.n_embd)), n,
                block);
            for (int64_t i = 0; i < n; ++i) {
                const std::span<const double> r(block.data() + i * n_vocab, size_t(n_vocab));
                const std::span<const float> t(test.data() + (b + i) * n_vocab, size_t(n_vocab));
                const size_t next = size_t(window[size_t(ref.first_scored + b + i + 1)]);
                kld.push_back(kl_divergence(r, t));
                same.push_back(argmax(r) == argmax(t));
                nll_sum += log_sum_exp(t) - double(t[next]);
                nll_ref_sum += log_sum_exp(r) - r[next];
            }
        }
        if (progress) {
            double sum = 0.0;
            for (double k : kld) sum += k;
            progress(int64_t(w), sum / double(kld.size()));
        }
    }
    FidelityStats s = summarize_fidelity(std::move(kld), same, nll_sum, nll_ref_sum);
    s.ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return s;
}

}  // namespace fluoro
