#include "eval/bench.h"

#include <algorithm>
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

// Prefills `tokens` at positions start.. in max_batch pieces, the cache first cut back to
// `start` tokens; returns seconds.
double run_pp(Model& model, KvCache& kv, const std::vector<int32_t>& tokens, int64_t start) {
    std::vector<int32_t> pos(tokens.size()), seq(tokens.size(), 0);
    for (size_t i = 0; i < pos.size(); ++i) pos[i] = int32_t(start + int64_t(i));
    kv.set_length(0, start);
    const auto t0 = Clock::now();
    for (size_t b = 0; b < tokens.size(); b += size_t(model.max_batch())) {
        const size_t n = std::min(tokens.size() - b, size_t(model.max_batch()));
        const int32_t last = int32_t(n - 1);
        const Batch batch{std::span(tokens).subspan(b, n), std::span(pos).subspan(b, n),
                          std::span(seq).subspan(b, n), std::span<const int32_t>(&last, 1)};
        model.forward(batch, kv);
        kv.set_length(0, start + int64_t(b + n));
    }
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Single-token steps at positions start.., the cache first cut back to `start`; returns seconds.
double run_tg(Model& model, KvCache& kv, const std::vector<int32_t>& tokens, int64_t start) {
    kv.set_length(0, start);
    const int32_t seq = 0, row = 0;
    const auto t0 = Clock::now();
    for (size_t i = 0; i < tokens.size(); ++i) {
        const int32_t pos = int32_t(start + int64_t(i));
        const Batch batch{std::span(tokens).subspan(i, 1), std::span<const int32_t>(&pos, 1),
                          std::span<const int32_t>(&seq, 1), std::span<const int32_t>(&row, 1)};
        model.forward(batch, kv);
        kv.set_length(0, pos + 1);
    }
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

BenchResult measure(const std::string& name, int64_t n, int64_t depth, int64_t reps,
                    const std::function<double()>& run) {
    BenchResult r{name, n, depth, {}, 0, 0, 0};
    r.first_run_tps = double(n) / run();  // warm-up: page in the weights, settle the thread pool
    for (int64_t i = 0; i < reps; ++i) r.samples_tps.push_back(double(n) / run());
    for (double s : r.samples_tps) r.mean_tps += s;
    r.mean_tps /= double(r.samples_tps.size());
    for (double s : r.samples_tps) r.sd_tps += (s - r.mean_tps) * (s - r.mean_tps);
    r.sd_tps =
        r.samples_tps.size() > 1 ? std::sqrt(r.sd_tps / double(r.samples_tps.size() - 1)) : 0;
    return r;
}

}  // namespace

int64_t bench_context(const BenchOptions& opt) {
    return opt.depth + std::max(opt.n_prompt, opt.n_gen);
}

std::string bench_test_name(const char* kind, int64_t n, int64_t depth) {
    std::string name = kind + std::to_string(n);
    if (depth > 0) name += "@d" + std::to_string(depth);
    return name;
}

std::vector<BenchResult> run_bench(Model& model, KvCache& kv, const BenchOptions& opt) {
    if (opt.repetitions < 1) throw Error("bench: repetitions must be at least 1");
    if (opt.n_prompt < 0 || opt.n_gen < 0 || opt.depth < 0)
        throw Error("bench: token counts and depth must not be negative");
    if (kv.capacity(0) < bench_context(opt))
        throw Error("bench: the KV cache holds " + std::to_string(kv.capacity(0)) +
                    " tokens, the tests need " + std::to_string(bench_context(opt)) +
                    " (depth + max(n_prompt, n_gen))");
    std::vector<BenchResult> out;
    if (opt.n_prompt == 0 && opt.n_gen == 0) return out;
    if (opt.depth > 0)
        run_pp(model, kv, random_tokens(opt.depth, model.n_vocab(), opt.seed + 2), 0);
    if (opt.n_prompt > 0) {
        const auto tokens = random_tokens(opt.n_prompt, model.n_vocab(), opt.seed);
        out.push_back(measure(bench_test_name("pp", opt.n_prompt, opt.depth), opt.n_prompt,
                              opt.depth, opt.repetitions,
                              [&] { return run_pp(model, kv, tokens, opt.depth); }));
    }
    if (opt.n_gen > 0) {
        const auto tokens = random_tokens(opt.n_gen, model.n_vocab(), opt.seed + 1);
        out.push_back(measure(bench_test_name("tg", opt.n_gen, opt.depth), opt.n_gen, opt.depth,
                              opt.repetitions,
                              [&] { return run_tg(model, kv, tokens, opt.depth); }));
    }
    return out;
}

}  // namespace fluoro
