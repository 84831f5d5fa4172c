// Two recorded runs side by side — what `fluoro compare` prints (and the window's Compare dialog
// shows): their figures and settings key by key, where their token streams part, and where the
// time went per operation category (the profiler's Matmul, Attention, NormRope, FFN, LM head,
// Other, Sampling), per decoded token and per prompt token, with the categories that changed
// named — and, where both runs were recorded at telemetry level trace, per operation (every
// layer's QKV projection, attention, FFN... summed). Only the runs' recorded numbers are
// rearranged: nothing is re-measured.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "store/records.h"

namespace fluoro::app {

// One figure or setting of both runs: numbers where it has them (nullopt: the run lacks it, e.g.
// a run that never finished has no TTFT), else text.
struct CompareStat {
    std::string name, unit;
    std::optional<double> a, b;
    std::string text_a, text_b;  // the values as shown ("—" where absent)
    bool differs = false;
    bool setting = false;  // an input of the run (model, settings, hardware), not a result
};

// One operation category in one phase: microseconds per token (decode: per decode step's token;
// prefill: per computed prompt token) in each run, and its share of that phase's step time.
struct CompareOp {
    std::string category;  // time_category_name: "matmul", "attention", ...
    double us_a = 0, us_b = 0;
    double share_a = 0, share_b = 0;  // of the phase's step wall time, 0..1
    // b differs from a by more than kOpChange of a and by more than kOpShare of b's phase time:
    // a reading aid that names the categories worth looking at, not a significance test.
    bool changed = false;
};
inline constexpr double kOpChange = 0.10, kOpShare = 0.02;

struct ComparePhase {
    std::string phase;  // "decode" or "prefill"
    int64_t tokens_a = 0, tokens_b = 0;
    double step_us_a = 0, step_us_b = 0;  // wall time of the phase's steps, per token
    std::vector<CompareOp> ops;           // every category, in time_category order
    // When every step of the phase was traced in both runs (telemetry level trace): the same per
    // op name (category holds the name: "attn_q+attn_k+attn_v", "attention", ...), every layer
    // summed, a's order first then b's new names; empty otherwise.
    std::vector<CompareOp> named_ops;
};

struct RunComparison {
    std::vector<CompareStat> stats;  // figures, then settings and hardware key by key
    std::vector<ComparePhase> phases;
    int64_t tokens_a = 0, tokens_b = 0;
    // The first generated token index whose tokens differ (or where one stream ended early);
    // nullopt: identical streams.
    std::optional<int64_t> first_divergence;
    int64_t diverged_tokens = 0;  // indices whose tokens differ (a missing one counts)
};

RunComparison compare_runs(const RunRecord& a, const RunRecord& b);

// A Markdown report (headings, tables, the token streams around the first divergence) and the
// same as JSON; label_a / label_b name the runs ("run 12", "export.json#2").
std::string comparison_markdown(const RunComparison& c, const RunRecord& a, const RunRecord& b,
                                const std::string& label_a, const std::string& label_b);
nlohmann::json comparison_json(const RunComparison& c, const std::string& label_a,
                               const std::string& label_b);

}  // namespace fluoro::app
