#include "measure/claims.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "common/format.h"
#include "core/error.h"
#include "eval/kv_memory.h"
#include "eval/kv_scaling.h"
#include "eval/spec_bench.h"
#include "measure/claim_attention.h"
#include "measure/claim_flash.h"
#include "measure/claim_prefix.h"
#include "measure/eval_text.h"
#include "model/model.h"
#include "speculative/prompt_lookup.h"

namespace fluoro::app {
namespace {

using nlohmann::json;

constexpr const char* kDefaultClaimText = "/usr/share/common-licenses/GPL-3";

// Timing needs tokens, not meaning: the passkey filler, repeated (eval/kv_eval.h).
std::vector<int32_t> filler_tokens(const Model& model, int64_t n) {
    std::string text;
    std::vector<int32_t> tokens;
    while (int64_t(tokens.size()) < n) {
        text +=
            "The grass is green. The sky is blue. The sun is yellow. Here we go. There and "
            "back again. ";
        if (text.size() > size_t(n) * 2) tokens = model.tokenizer().encode(text, false, false);
    }
    tokens.resize(size_t(n));
    return tokens;
}

json claim_kv_scaling(Model& model, const ClaimsOptions& opt) {
    const auto trained = int64_t(model.hparams().n_ctx_train);
    std::vector<int64_t> positions;
    for (const int64_t p : opt.positions)
        if (p >= 1 && (trained <= 0 || p + 1 < trained)) positions.push_back(p);
    if (positions.empty()) throw Error("kv_scaling: no position fits the model's context");
    std::sort(positions.begin(), positions.end());
    positions.erase(std::unique(positions.begin(), positions.end()), positions.end());
    const std::vector<int32_t> text = filler_tokens(model, positions.back() + 1);
    const std::unique_ptr<KvCache> kv = model.create_kv(positions.back() + 2, 1, KvType::F16);
    const KvScalingResult r = measure_kv_scaling(model, *kv, text, positions, opt.reps);
    json points = json::array();
    for (const KvScalingPoint& p : r.points)
        points.push_back({{"position", p.position},
                          {"cached_ms", p.cached_ms},
                          {"recompute_ms", p.recompute_ms}});
    json j = kv_scaling_verdict(r.cached_slope, r.recompute_slope, r.max_logit_diff);
    j["claim"] =
        "The KV cache turns the quadratic cost of generating (every token recomputing "
        "the whole prefix) into a linear one.";
    j["data"] = {{"points", points},
                 {"cached_slope", r.cached_slope},
                 {"recompute_slope", r.recompute_slope},
                 {"max_logit_diff", r.max_logit_diff}};
    return j;
}

json claim_kv_memory(Model& model) {
    const KvType types[] = {KvType::F32, KvType::F16, KvType::Q8_0, KvType::Q4_0};
    json rows = json::array();
    bool all_equal = true;
    std::string why;
    for (const KvType t : types) {
        std::vector<KvMemoryRow> one;
        try {
            one = measure_kv_memory(model, std::span<const KvType>(&t, 1), 1024);
        } catch (const Error& e) {  // a head size a quantized type cannot hold: said, not hidden
            rows.push_back({{"kv_type", kv_type_name(t)}, {"error", e.what()}});
            continue;
        }
        const KvMemoryRow& r = one.front();
        all_equal = all_equal && r.formula_per_token == r.cache_per_token;
        rows.push_back({{"kv_type", kv_type_name(t)},
                        {"element_bytes", r.element_bytes},
                        {"formula_per_token", r.formula_per_token},
                        {"cache_per_token", r.cache_per_token},
                        {"ctx", r.ctx},
                        {"allocated", r.allocated}});
        if (t == KvType::F16)
            why = "f16: " + std::to_string(r.formula_per_token) + " B per token by the formula, " +
                  std::to_string(r.cache_per_token) + " B by the allocator";
    }
    // The documents' worked example for a Gemma 2-class model, from published shapes
    // (gemma-2-9b's config.json: 42 layers, 8 KV heads, head_dim 256), in f16.
    const uint64_t gemma2 = kv_bytes_per_token(42, 8, 256, 2.0);
    return {
        {"claim", "KV cache bytes per token = 2 × layers × KV heads × head dim × element size."},
        {"verdict", all_equal ? "reproduced" : "not reproduced"},
        {"why", (all_equal ? "the allocator reserves exactly the formula's bytes for every "
                             "KV type; "
                           : "the allocator's bytes differ from the formula; ") +
                    why},
        {"data",
         {{"rows", rows},
          {"worked_example",
           {{"model", "Gemma 2 9B (42 layers, 8 KV heads, head dim 256, f16)"},
            {"bytes_per_token", gemma2},
            {"bytes_at_8192", gemma2 * 8192}}}}}};
}

json claim_verify_cost(Model& model, const ClaimsOptions& opt) {
    const std::vector<int32_t> prompt = filler_tokens(model, 64);
    const std::unique_ptr<KvCache> kv =
        model.create_kv(int64_t(prompt.size()) + opt.max_draft + 2, 1, KvType::F16);
    const std::vector<double> v = spec::measure_verify_cost(model, *kv, prompt, opt.max_draft);
    json j = verify_cost_verdict(v);
    j["claim"] =
        "Verifying k drafted tokens costs about as much as one decode step (the forward "
        "is memory-bound, so k + 1 tokens read the weights once).";
    // What the acceptance rates imply against what is measured: prompt lookup on the copy and
    // chat prompt sets (eval/spec_bench.h), the speedup Leviathan et al.'s model predicts from
    // tau with the textbook's verify cost of one step, tau / (gamma · c + 1), and with the
    // measured v(gamma), beside the measured one.
    json rows = json::array();
    std::string worst;
    if (opt.spec_n_gen > 0) {
        spec::SpecBenchOptions bench;
        bench.n_gen = opt.spec_n_gen;
        bench.categories = {"copy", "chat"};
        bench.spec.max_draft = opt.max_draft;
        spec::PromptLookupOptions lookup;
        lookup.max_draft = opt.max_draft;
        spec::PromptLookupDrafter drafter(lookup);
        spec::Drafter* drafters[] = {&drafter};
        const std::unique_ptr<KvCache> bench_kv = model.create_kv(2048, 1, KvType::F16);
        const spec::SpecBenchResult r = spec::run_spec_bench(model, *bench_kv, drafters, bench);
        for (const spec::SpecBenchRow& row : r.rows) {
            const double textbook = row.tau / (row.mean_draft * row.draft_cost + 1.0);
            rows.push_back({{"drafter", row.drafter},
                            {"category", row.category},
                            {"acceptance", row.acceptance},
                            {"tau", row.tau},
                            {"mean_draft", row.mean_draft},
                            {"implied_by_textbook", textbook},
                            {"implied_by_measured_cost", row.expected_speedup},
                            {"measured", row.speedup}});
            worst += (worst.empty() ? "" : "; ") + row.category + ": tau " +
                     format_number("%.2f", row.tau) + " implies " +
                     format_number("%.2f×", textbook) + " at a one-step verify, " +
                     format_number("%.2f×", row.expected_speedup) +
                     " at the measured one; measured " + format_number("%.2f×", row.speedup);
        }
    }
    if (!worst.empty()) j["why"] = j["why"].get<std::string>() + "; prompt lookup, " + worst;
    j["data"] = {{"v", v}, {"prompt_tokens", int64_t(prompt.size())}, {"speedups", rows}};
    return j;
}

}  // namespace

json kv_scaling_verdict(double cached_slope, double recompute_slope, float max_logit_diff) {
    // Per-token cost ~ n^slope. The textbook exponents are 0 (cached: the weights dominate,
    // attention adds a little per cached token) and 1 (recomputed: every token's projections
    // again); 0.5, halfway, is where a measured slope stops looking like one and starts looking
    // like the other.
    const bool ok = recompute_slope >= 0.5 && recompute_slope - cached_slope >= 0.5;
    std::string why = "per token, without the cache ~n^" + format_number("%.2f", recompute_slope) +
                      ", with it ~n^" + format_number("%.2f", cached_slope) +
                      ", so a generation of N tokens costs ~N^" +
                      format_number("%.2f", recompute_slope + 1) + " against ~N^" +
                      format_number("%.2f", cached_slope + 1) + "; the logits differ by " +
                      format_number("%.3g", double(max_logit_diff)) + " at most";
    return {{"verdict", ok ? "reproduced" : "not reproduced"}, {"why", why}};
}

json verify_cost_verdict(const std::vector<double>& v) {
    if (v.size() < 2) return {{"verdict", "not measured"}, {"why", "no drafted tokens"}};
    // "About one step": within half a step of it at the longest draft.
    const double last = v.back();
    const bool ok = last <= 1.5;
    const std::string why = "verifying " + std::to_string(v.size() - 1) + " drafted tokens costs " +
                            format_number("%.2f", last) + " decode steps on this backend" +
                            (ok ? ""
                                : " (the forward over k + 1 tokens is compute-bound here, "
                                  "not memory-bound)");
    return {{"verdict", ok ? "reproduced" : "depends on hardware: not on this one"}, {"why", why}};
}

std::string claim_names() {
    std::string out;
    for (const char* n : kClaimNames) out += (out.empty() ? "" : ", ") + std::string(n);
    return out;
}

void check_claim_names(const std::vector<std::string>& names) {
    for (const std::string& name : names)
        if (std::find(std::begin(kClaimNames), std::end(kClaimNames), name) ==
            std::end(kClaimNames))
            throw Error("claims: unknown claim '" + name + "' (known: " + claim_names() + ")");
}

json run_claims(Model& model, const ClaimsOptions& opt,
                const std::function<void(const std::string&)>& progress) {
    check_claim_names(opt.only);
    auto wanted = [&](const std::string& name) {
        return opt.only.empty() ||
               std::find(opt.only.begin(), opt.only.end(), name) != opt.only.end();
    };
    // The text: the file given, Debian's GPL-3 text, or the filler.
    std::string text_name = opt.text;
    if (text_name.empty() && std::filesystem::exists(kDefaultClaimText))
        text_name = kDefaultClaimText;
    const int64_t trained =
        model.hparams().n_ctx_train > 0 ? int64_t(model.hparams().n_ctx_train) : int64_t(1) << 20;
    const int64_t need = std::min<int64_t>(
        trained - 2, std::max(opt.attention_tokens, std::max(opt.prefix_tokens, int64_t(1024))));
    std::vector<int32_t> text;
    if (!text_name.empty()) text = eval_text_tokens(model, read_eval_text(text_name));
    if (int64_t(text.size()) < need) {  // too short (or none): the filler
        text = filler_tokens(model, need);
        text_name = "filler (\"The grass is green. …\" repeated)";
    }
    text.resize(size_t(need));
    std::optional<AttentionSample> sample;
    auto attention = [&]() -> const AttentionSample& {
        if (!sample) {
            const int64_t n = std::min<int64_t>(opt.attention_tokens, need);
            std::vector<int64_t> queries;
            for (int i = 0; i < 16; ++i) queries.push_back(n / 2 + (n / 2 - 1) * i / 15);
            sample =
                sample_attention(model, std::span<const int32_t>(text).first(size_t(n)), queries);
        }
        return *sample;
    };
    json claims = json::array();
    for (const char* name : kClaimNames) {
        const std::string n = name;
        if (!wanted(n)) continue;
        if (progress) progress(n);
        json c;
        if (n == "kv_scaling")
            c = claim_kv_scaling(model, opt);
        else if (n == "kv_memory")
            c = claim_kv_memory(model);
        else if (n == "flash_io")
            c = claim_flash_io(opt.io_contexts);
        else if (n == "sliding_window")
            c = claim_sliding_window(model, attention(),
                                     std::min<int64_t>(opt.attention_tokens, need));
        else if (n == "sinks")
            c = claim_sinks(model, attention(), text, std::min<int64_t>(1024, need),
                            opt.sink_budget);
        else if (n == "heavy_hitters")
            c = claim_heavy_hitters(attention());
        else if (n == "verify_cost")
            c = claim_verify_cost(model, opt);
        else
            c = claim_prefix_cache(model,
                                   std::span<const int32_t>(text).first(
                                       size_t(std::min<int64_t>(opt.prefix_tokens, need))),
                                   {0.0, 0.25, 0.5, 0.75, 0.9}, std::max(opt.reps, 5));
        c["name"] = n;
        claims.push_back(std::move(c));
    }
    return {{"claims", claims}, {"text", text_name}};
}

}  // namespace fluoro::app
