// The CLI's measurements as one call the window can make: perplexity of a text file (`fluoro
// ppl`), the KV-policy grid (`fluoro eval kv`), the speculative-decoding benchmark (`fluoro
// bench spec`), the textbook's claims (`fluoro eval claims`, measure/claims.h) and the attention
// variants (`fluoro eval attn`, measure/attn_eval.h), each from a flat
// set of named parameters (the CLI's flag names without "--"), run on the calling thread with its
// own loaded copy of the model, reporting progress and stoppable between steps. The result is the
// JSON the CLI's --json prints (measure_json.h), wrapped with what was run, so the store keeps it
// and measure_plots.h draws it.
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace fluoro::app {

enum class MeasureKind { Perplexity, KvEval, SpecBench, Claims, AttnEval };

// "ppl", "eval_kv", "bench_spec", "claims", "eval_attn"
std::string_view measure_kind_name(MeasureKind k);
std::string_view measure_kind_title(MeasureKind k);  // "Perplexity of a text", ...
std::optional<MeasureKind> parse_measure_kind(std::string_view name);
inline constexpr MeasureKind kMeasureKinds[] = {MeasureKind::Perplexity, MeasureKind::KvEval,
                                                MeasureKind::SpecBench, MeasureKind::Claims,
                                                MeasureKind::AttnEval};

struct MeasureParam {
    std::string key;    // the CLI flag's name without "--" ("ctx", "budgets")
    std::string label;  // for a form
    std::string value;  // the default
    std::string help;
    bool file = false;  // a path (a form offers a file chooser); empty allowed
};

// The parameters of a measurement with the window's defaults: smaller than the CLI's, so that a
// laptop finishes in minutes (the CLI's are for the docs' tables).
std::vector<MeasureParam> measure_params(MeasureKind k);

using MeasureValues = std::map<std::string, std::string>;

struct MeasureRequest {
    MeasureKind kind = MeasureKind::Perplexity;
    std::filesystem::path model;
    MeasureValues values;  // missing keys take measure_params' defaults; unknown keys are errors
};

struct MeasureControl {
    // (what is being done, fraction done in [0, 1] or -1 when unknown), from the running thread.
    std::function<void(const std::string&, double)> progress;
    const std::atomic<bool>* cancel = nullptr;  // checked at each progress point
};

// Thrown when MeasureControl::cancel was set. Not a fluoro::Error, so the KV eval's loop (which
// records an Error as a failed cell and goes on) lets it through.
struct MeasureCancelled : std::runtime_error {
    MeasureCancelled() : std::runtime_error("measurement cancelled") {}
};

// Validates every parameter (Error naming it) before the model is loaded, then runs. Returns
// {"kind", "model", "threads", "params": {every key: value}, "result": the CLI's JSON}.
nlohmann::json run_measurement(const MeasureRequest& req, const MeasureControl& control = {});

}  // namespace fluoro::app
