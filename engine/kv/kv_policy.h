// What a sequence keeps in its KV cache when it would outgrow its budget: the eviction policies
// of the long-context papers as pure functions from (what is cached, what attention said about
// it) to the slots to keep. Sequence (decode/sequence.h) applies the decision through
// Model::compact_kv and records it as a KvEviction.
//
//   full          never evicts: the sequence stops with a clear error at its budget.
//   window        the W most recent tokens.
//   streaming     S attention-sink tokens (the first ones) + the W most recent (StreamingLLM,
//                 Xiao et al. 2023); positions are reassigned inside the cache.
//   h2o           heavy hitters by accumulated attention + the most recent tokens (H2O, Zhang
//                 et al. 2023): keeps the tokens with the largest attention summed over the
//                 steps they were cached, GQA-aggregated over each KV head's query heads; half
//                 the budget heavy, half recent by default. The accumulated score comes from the
//                 statistics pass (the last query row of each forward step), so a prefill in
//                 chunks adds one row per chunk, not every row as the paper's prefill does.
//   scissorhands  evicts first the tokens whose attention stayed below the average (the uniform
//                 level, summed over heads) most often over a history window (Liu et al. 2023),
//                 a decayed count over `history` steps; recent window protected.
//   snapkv        at the end of a prefill longer than the budget, keeps the prompt positions the
//                 last observation window of queries attends to most (average-pooled), plus that
//                 window (Li et al. 2024); later evictions fall back to h2o.
//
// Every policy keeps `sinks` first tokens except window, and re-rotates the kept keys to their
// new slots (the H2O paper's main variant keeps original positions instead). The list of policies
// and these traits (sinks, scores, recent window) is settings/settings.h's kv_policies().
//
// One decision covers every layer and KV head (the paged cache shares one block table across
// layers), so scores are summed over layers and KV heads: a simplification of the papers'
// per-head caches, recorded in docs/PERFORMANCE.md next to the quality it costs.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "settings/settings.h"

namespace fluoro {

struct KvPolicyConfig {
    KvPolicyKind kind = KvPolicyKind::Full;
    // Most tokens the sequence keeps cached (0: the whole context). When an append would go
    // past it, the policy evicts down to budget - evict_chunk (or fewer) first.
    int64_t budget = 0;
    int64_t sinks = 4;  // first tokens always kept (every evicting policy but window)
    // Recent tokens protected from eviction, for the policies whose recent window is a setting
    // (KvPolicyInfo::recent_setting); 0: the policy's default (KvPolicyInfo::default_recent).
    int64_t recent = 0;
    int64_t history = 0;   // scissorhands: steps of history (0: budget / 2)
    int64_t observe = 32;  // snapkv: observation window (last prompt queries)
    int64_t pool = 5;      // snapkv: average-pooling kernel over the observed attention
    // Tokens freed per eviction (0: max(1, budget / 16)): evicting in chunks amortizes the
    // compaction and key re-rotation over many steps (llama.cpp's context shift frees half).
    int64_t evict_chunk = 0;

    bool needs_scores() const { return kv_policy_info(kind).needs_scores; }
    // "" when the config is usable for a context of n_ctx tokens, else what is wrong.
    std::string problem(int64_t n_ctx) const;
    // budget resolved against the context; recent and chunk resolved against the budget (recent:
    // the most recent tokens an eviction keeps before the sinks are taken out of the budget).
    int64_t effective_budget(int64_t n_ctx) const;
    int64_t effective_recent(int64_t n_ctx) const;
    int64_t effective_chunk(int64_t n_ctx) const;
};

// Why a slot was kept or evicted.
enum class KvKeepReason : uint8_t { Sink, Recent, Heavy, Evicted };
std::string_view kv_keep_reason_name(KvKeepReason r);

// Per cached slot, what the scoring policies read. Arrays are empty when not needed.
struct KvPolicyInput {
    int64_t length = 0;    // slots cached now
    int64_t incoming = 0;  // slots the next append needs
    // h2o: accumulated attention per slot (summed over layers and KV heads).
    std::span<const float> attention;
    // scissorhands: per slot, how often (decayed over `history` steps) its attention was below
    // the average of the keys it was compared with.
    std::span<const float> low_count;
    // snapkv: per slot, attention of the observation window's queries (summed over them, heads
    // and layers) — only at the end of a prefill.
    std::span<const float> observed;
};

struct KvDecision {
    std::vector<int64_t> keep;          // ascending slots
    std::vector<int64_t> evicted;       // ascending slots
    std::vector<KvKeepReason> reasons;  // per kept slot
};

// The slots to keep so that `incoming` more fit within the budget, or nullopt when nothing needs
// evicting. Throws Error for the full policy at its limit (the message says the budget and how to
// raise it) and when the input lacks the scores the policy needs.
std::optional<KvDecision> kv_decide(const KvPolicyConfig& cfg, int64_t n_ctx,
                                    const KvPolicyInput& in);

// Scissorhands' persistence statistic, one step: for each slot j < n, low[j] decays by
// (1 - 1/history) and gains 1 when step_attention[j] < mean(step_attention[0..n)).
void kv_update_low_count(std::span<float> low, std::span<const float> step_attention,
                         int64_t history);

}  // namespace fluoro
