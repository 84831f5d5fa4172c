// `fluoro bench`: prompt processing (pp) and text generation (tg) throughput measured as
// llama-bench does — pp: n_prompt random tokens prefilled in max_batch pieces; tg: n_gen
// single-token decode steps — after a warm-up run, over several repetitions, reported as mean ±
// standard deviation of tok/s. Both start from an empty cache, or with `depth` random tokens
// already in it (llama-bench -d): "tg128 at 4k context" is n_prompt 0, n_gen 128, depth 4096.
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
    int64_t depth = 0;  // tokens in the KV cache before each timed run (prefilled, untimed)
    int64_t repetitions = 5;
    uint64_t seed = 1234;  // for the random tokens
};

struct BenchResult {
    std::string test;  // "pp512", "tg128", "tg128@d4096"
    int64_t tokens = 0;
    int64_t depth = 0;
    std::vector<double> samples_tps;
    double mean_tps = 0;
    double sd_tps = 0;
    // The warm-up run's rate (not among the samples). For the process's first test (pp without
    // depth) it is the cold figure: the first forward after the model was loaded, which pays
    // whatever first touch is left (weights read in place from the mapped file, scratch buffers,
    // the pool's first wake-up); a user's first prompt waits that long.
    double first_run_tps = 0;
};

// The tokens sequence 0 of the KV cache must hold: depth + max(n_prompt, n_gen).
int64_t bench_context(const BenchOptions& opt);

// The test's name as llama-bench prints it, without spaces: "pp512", "tg128@d4096".
std::string bench_test_name(const char* kind, int64_t n, int64_t depth);

// Throws Error when the cache is too small or the options make no sense. The depth tokens are
// prefilled once; every run (warm-up included) then starts from exactly that cache: the timed
// steps write only positions past the depth, which are dropped before the next run.
std::vector<BenchResult> run_bench(Model& model, KvCache& kv, const BenchOptions& opt);

}  // namespace fluoro
