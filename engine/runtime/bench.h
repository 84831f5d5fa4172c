// `fluoro bench`: prompt processing (pp) and text generation (tg) throughput measured as
// llama-bench does — pp: n_prompt random tokens prefilled into an empty cache in batches; tg:
// n_gen single-token decode steps from an empty cache — after a warm-up run, over several
// repetitions, reported as mean ± standard deviation of tok/s.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fluoro {

class Model;
class KvCache;

struct BenchOptions {
    int64_t n_prompt = 512;
    int64_t n_gen = 128;
    int64_t repetitions = 5;
    uint64_t seed = 1234;  // for the random tokens
};

struct BenchResult {
    std::string test;  // "pp512", "tg128"
    int64_t tokens = 0;
    std::vector<double> samples_tps;
    double mean_tps = 0;
    double sd_tps = 0;
};

// kv must hold max(n_prompt, n_gen) tokens in sequence 0.
std::vector<BenchResult> run_bench(Model& model, KvCache& kv, const BenchOptions& opt);

}  // namespace fluoro
