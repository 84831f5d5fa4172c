#include "measure/measure_json.h"

namespace fluoro::app {

nlohmann::json perplexity_json(const PerplexityResult& r, int64_t n_ctx) {
    return {{"ppl", r.ppl},
            {"mean_nll", r.mean_nll},
            {"scored_tokens", r.scored_tokens},
            {"chunks", r.chunks},
            {"n_ctx", n_ctx},
            {"running_ppl", r.running_ppl},
            {"seconds", r.ms / 1000.0}};
}

nlohmann::json kv_eval_cells_json(const std::vector<KvEvalCell>& cells) {
    nlohmann::json out = nlohmann::json::array();
    for (const KvEvalCell& c : cells) {
        nlohmann::json jc = {
            {"policy", kv_policy_name(c.policy)},  {"budget", c.budget.label()},
            {"kv_type", kv_types_name(c.kv_type)}, {"errors", c.errors},
            {"passkey", nlohmann::json::array()},  {"speed", nlohmann::json::array()}};
        if (c.ppl) {
            const KvPplResult& p = *c.ppl;
            jc["ppl"] = {{"ppl", p.ppl},
                         {"mean_nll", p.mean_nll},
                         {"tokens", p.scored_tokens + 1},
                         {"budget_tokens", p.budget_tokens},
                         {"bucket_nll", p.bucket_nll},
                         {"evicted_tokens", p.evictions.evicted_tokens},
                         {"eviction_events", p.evictions.events},
                         {"max_cached", p.evictions.max_cached},
                         {"seconds", p.seconds},
                         {"tok_s", p.tokens_per_s}};
        }
        for (const PasskeyTrial& t : c.passkey)
            jc["passkey"].push_back({{"length", t.length},
                                     {"prompt_tokens", t.prompt_tokens},
                                     {"depth", t.depth},
                                     {"budget_tokens", t.budget_tokens},
                                     {"key", t.key},
                                     {"answer", t.answer},
                                     {"correct", t.correct},
                                     {"needle_tokens", t.needle_tokens},
                                     {"needle_kept", t.needle_kept},
                                     {"evicted_tokens", t.evictions.evicted_tokens}});
        for (const KvSpeedResult& s : c.speed)
            jc["speed"].push_back({{"context", s.context},
                                   {"n_gen", s.n_gen},
                                   {"budget_tokens", s.budget_tokens},
                                   {"cached_tokens", s.cached_tokens},
                                   {"kv_bytes", s.kv_bytes},
                                   {"prefill_seconds", s.prefill_seconds},
                                   {"tok_s", s.tokens_per_s}});
        out.push_back(jc);
    }
    return out;
}

nlohmann::json spec_bench_json(const spec::SpecBenchResult& r) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& x : r.rows)
        rows.push_back({{"drafter", x.drafter},
                        {"category", x.category},
                        {"prompts", x.prompts},
                        {"tokens", x.tokens},
                        {"copied_fraction", x.copied},
                        {"drafted", x.drafted},
                        {"accepted", x.accepted},
                        {"target_forwards", x.target_steps},
                        {"acceptance_rate", x.acceptance},
                        {"mean_tokens_per_forward", x.tau},
                        {"mean_draft_length", x.mean_draft},
                        {"acceptance_by_position", x.accept_by_position},
                        {"plain_tps", x.plain_tps},
                        {"spec_tps", x.spec_tps},
                        {"speedup", x.speedup},
                        {"draft_cost_ratio", x.draft_cost},
                        {"expected_speedup", x.expected_speedup}});
    nlohmann::json prompts = nlohmann::json::array();
    for (const auto& x : r.prompts)
        prompts.push_back(
            {{"drafter", x.drafter},
             {"category", x.category},
             {"prompt", x.prompt},
             {"tokens", x.tokens},
             {"copied_fraction", x.copied},
             {"acceptance_rate", x.acceptance},
             {"mean_tokens_per_forward", x.tau},
             {"speedup", x.speedup},
             {"drafted", x.drafted},
             {"accepted", x.accepted},
             {"target_forwards", x.target_steps},
             {"reference_copied_fraction",
              x.reference_copied ? nlohmann::json(*x.reference_copied) : nlohmann::json()}});
    nlohmann::json in_loop = nlohmann::json::array();
    for (size_t k = 0; k < r.verify_cost_in_loop.size(); ++k)
        in_loop.push_back(r.verify_steps_in_loop[k] > 0 ? nlohmann::json(r.verify_cost_in_loop[k])
                                                        : nlohmann::json());
    return {{"verify_cost", r.verify_cost},
            {"verify_cost_in_loop", in_loop},
            {"verify_steps_in_loop", r.verify_steps_in_loop},
            {"target_token_ms", r.target_token_ms},
            {"rows", rows},
            {"prompts", prompts}};
}

}  // namespace fluoro::app
