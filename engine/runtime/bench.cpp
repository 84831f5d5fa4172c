#include "runtime/bench.h"

#include <chrono>
#include <cmath>
#include <functional>
#include <random>

#include "core/error.h"
#include "model/model.h"

namespace fluoro {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<int32_t> random_tokens(int64_t n, int64_t n_vocab, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<int32_t> t(static_cast<size_t>(n));
    for (auto& id : t) id = int32_t(rng() % uint64_t(n_vocab));
    return t;
}

// Prefills `tokens` into an empty cache in max_batch pieces; returns seconds.
double run_pp(Model& model, KvCache& kv, const std::vector<int32_t>& tokens) {
    std::vector<int32_t> pos(tokens.size()), seq(tokens.size(), 0);
    for (size_t i = 0; i < pos.size(); ++i) pos[i] = int32_t(i);
    kv.set_length(0, 0);
    const auto t0 = Clock::now();
    for (size_t b = 0; b < tokens.size(); b += size_t(model.max_batch())) {
        const size_t n = std::min(tokens.size() - b, size_t(model.max_batch()));
        const int32_t last = int32_t(n - 1);
        const Batch batch{std::span(tokens).subspan(b, n), std::span(pos).subspan(b, n),
                          std::span(seq).subspan(b, n), std::span<const int32_t>(&last, 1)};
        model.forward(batch, kv);
        kv.set_length(0, int64_t(b + n));
    }
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// n single-token steps from an empty cache; returns seconds.
double run_tg(Model& model, KvCache& kv, const std::vector<int32_t>& tokens) {
    kv.set_length(0, 0);
    const int32_t seq = 0, row = 0;
    const auto t0 = Clock::now();
    for (size_t i = 0; i < tokens.size(); ++i) {
        const int32_t pos = int32_t(i);
        const Batch batch{std::span(tokens).subspan(i, 1), std::span<const int32_t>(&pos, 1),
                          std::span<const int32_t>(&seq, 1), std::span<const int32_t>(&row, 1)};
        model.forward(batch, kv);
        kv.set_length(0, int64_t(i + 1));
    }
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

BenchResult measure(const std::string& name, int64_t n, int64_t reps,
                    const std::function<double()>& run) {
    BenchResult r{name, n, {}, 0, 0};
    run();  // warm-up: page in the weights, settle the thread pool
    for (int64_t i = 0; i < reps; ++i) r.samples_tps.push_back(double(n) / run());
    for (double s : r.samples_tps) r.mean_tps += s;
    r.mean_tps /= double(r.samples_tps.size());
    for (double s : r.samples_tps) r.sd_tps += (s - r.mean_tps) * (s - r.mean_tps);
    r.sd_tps =
        r.samples_tps.size() > 1 ? std::sqrt(r.sd_tps / double(r.samples_tps.size() - 1)) : 0;
    return r;
}

}  // namespace

std::vector<BenchResult> run_bench(Model& model, KvCache& kv, const BenchOptions& opt) {
    if (opt.repetitions < 1) throw Error("bench: repetitions must be at least 1");
    if (kv.capacity(0) < std::max(opt.n_prompt, opt.n_gen))
        throw Error("bench: the KV cache is smaller than the test lengths");
    std::vector<BenchResult> out;
    if (opt.n_prompt > 0) {
        const auto tokens = random_tokens(opt.n_prompt, model.n_vocab(), opt.seed);
        out.push_back(measure("pp" + std::to_string(opt.n_prompt), opt.n_prompt, opt.repetitions,
                              [&] { return run_pp(model, kv, tokens); }));
    }
    if (opt.n_gen > 0) {
        const auto tokens = random_tokens(opt.n_gen, model.n_vocab(), opt.seed + 1);
        out.push_back(measure("tg" + std::to_string(opt.n_gen), opt.n_gen, opt.repetitions,
                              [&] { return run_tg(model, kv, tokens); }));
    }
    return out;
}

}  // namespace fluoro
