// One conversation's slot in the KV cache: the token ids whose K/V the cache holds for it, and the
// two ways to advance it — prefill (make the cache hold a prompt, reusing the longest prefix
// already cached, so a multi-turn chat never re-prefills its history) and decode (one token).
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <vector>

#include "kv/kv_cache.h"
#include "kv/kv_policy.h"

namespace fluoro {

class Model;
class PrefixCache;

struct PrefillStats {
    int64_t prompt_tokens = 0;    // length of the prompt
    int64_t reused_tokens = 0;    // prefix already in the cache (not recomputed)
    int64_t computed_tokens = 0;  // tokens run through the model
    double ms = 0;                // wall time of the computation
    // Where the reused prefix came from and why it ended (telemetry of the prompt cache).
    bool from_prefix_cache = false;  // the cross-conversation cache, not this conversation
    // The first prompt position the cache held a different token for (= reused_tokens), the
    // prompt's and the cache's token there; -1 when nothing cached continued past the match.
    int64_t diverge_at = -1;
    int32_t diverge_prompt_token = -1, diverge_cached_token = -1;
    // Prefix-cache entries (and their tokens) evicted to make room while preparing this prompt.
    int64_t evicted_entries = 0, evicted_tokens = 0;
};

// One eviction a Sequence made (kv/kv_policy.h): what was dropped and what stayed, by conversation
// position (index into history()).
struct SequenceEviction {
    KvPolicyKind policy = KvPolicyKind::Full;
    int64_t length_before = 0;          // slots cached before
    std::vector<int64_t> evicted;       // conversation positions dropped, ascending
    std::vector<int64_t> kept;          // conversation positions kept, ascending
    std::vector<KvKeepReason> reasons;  // per kept position
    double ms = 0;                      // decision + compaction + key re-rotation
};

class Sequence {
  public:
    Sequence(Model& model, KvCache& kv, int64_t seq_id);

    // Makes the cache hold exactly `prompt` and returns the logits of its last token (valid until
    // the next call). The last token is always computed (its logits are needed), so at most
    // prompt.size() - 1 tokens are reused. Errors: empty prompt, prompt longer than the context
    // (the message says both sizes), cancellation (the cache then holds a valid prefix).
    std::span<const float> prefill(std::span<const int32_t> prompt, PrefillStats* stats = nullptr,
                                   const std::atomic<bool>* cancel = nullptr);
    // Appends one token and returns its logits. Error when the context is full.
    std::span<const float> decode(int32_t token);
    // Appends up to max_batch tokens in one forward pass and returns the logits of every one of
    // them, (tokens.size(), n_vocab) row-major: speculative verification. Each row is computed
    // exactly as decode() would have computed it (batch-invariant kernels). Error when they do
    // not fit in the context or the batch.
    std::span<const float> extend(std::span<const int32_t> tokens);
    // Most tokens one extend() takes (the model's batch and logit-row limits).
    int64_t max_extend() const;

    // Continuous batching (decode/batch_decoder.h) computes several sequences in one forward
    // step, so it drives prefill's two halves itself. reuse_prefix: prefill() up to the
    // computation — the checks, the longest reusable prefix (this conversation's or the prefix
    // cache's) kept and the rest dropped; returns the tokens reused and fills `stats` but for
    // its time. Under a Full KV policy only (an evicting one compacts between chunks).
    size_t reuse_prefix(std::span<const int32_t> prompt, PrefillStats& stats);
    // The slot the next appended token takes (its position: slots hold conversation token i
    // at slot i without eviction).
    int64_t next_slot() const { return int64_t(tokens_.size()); }
    // A forward step the caller ran wrote `tokens` at slots next_slot().. of this sequence:
    // they are cached now.
    void appended(std::span<const int32_t> tokens);
    // What last_prefill() reports after a prefill the caller drove.
    void set_last_prefill(const PrefillStats& stats);

    // Every token appended since the last reset, cached or evicted: the conversation.
    const std::vector<int32_t>& tokens() const { return history_; }
    // The tokens whose K/V the cache holds, by slot, and each one's position in tokens().
    const std::vector<int32_t>& cached_tokens() const { return tokens_; }
    const std::vector<int64_t>& slot_positions() const { return slot_pos_; }
    // The leading conversation tokens whose K/V sits at slots 0.. (what a prefix cache may
    // keep): empty after an eviction policy dropped tokens.
    std::span<const int32_t> prefix_cacheable() const;
    int64_t context_size() const;
    // Tokens that can still be appended: unbounded (INT32_MAX) under an evicting policy.
    int64_t remaining() const;

    // The policy applied before each append that would outgrow its budget (kv/kv_policy.h).
    // Scoring policies (needs_scores()) read the backend's accumulated attention: the caller
    // turns AttentionCapture::stats on. Throws Error for a config the context cannot hold.
    void set_kv_policy(const KvPolicyConfig& cfg);
    const KvPolicyConfig& kv_policy() const { return policy_; }
    // Evictions since the last call, oldest first.
    std::vector<SequenceEviction> take_evictions();
    // Runs every later step through only the first n layers (0 = all): the self-speculative
    // draft. Forgets what is cached, which was computed with other layers.
    void set_exit_layer(int64_t n);
    int64_t exit_layer() const { return exit_layer_; }
    // Cross-conversation prompt cache (kv/prefix_cache.h; null: none). prefill() then keeps the
    // conversation it moves away from and starts from the longest cached prefix of its prompt,
    // when that is longer than what this sequence shares with it. Not under an evicting policy
    // or a layer exit (their slots do not hold a plain prefix).
    void set_prefix_cache(PrefixCache* cache) { prefix_cache_ = cache; }
    // What the last prefill() reused and computed (its PrefillStats).
    const PrefillStats& last_prefill() const { return last_prefill_; }
    void reset();  // forget everything cached for this sequence
    // Keep the first n tokens of the conversation (rollback): drops later tokens and the slots
    // that hold them.
    void truncate(int64_t n);

  private:
    bool evicting() const;
    // prefill()'s use of the prefix cache: stores the conversation being left, restores the
    // longest cached prefix of the prompt when it beats `reuse`; returns the tokens now reused.
    // Fills the cache fields of `info` (from_prefix_cache, diverge_*, evicted_*).
    size_t use_prefix_cache(std::span<const int32_t> prompt, size_t reuse, PrefillStats& info);
    int64_t budget() const;
    // Evicts (policy permitting) so that `incoming` more slots fit within `limit` (0: the
    // budget); throws when none may go.
    void make_room(int64_t incoming, std::span<const float> observed = {}, int64_t limit = 0);
    // Runs one forward step appending `tokens` at the next slots; returns the logits of `rows`.
    std::span<const float> forward_append(std::span<const int32_t> tokens,
                                          std::span<const int32_t> rows);
    void after_step();  // per-step policy statistics (scissorhands)
    // Accumulated attention per slot summed over layers and KV heads (empty when none).
    std::vector<float> slot_attention() const;

    Model& model_;
    KvCache& kv_;
    int64_t seq_;
    std::vector<int32_t> tokens_;    // by slot
    std::vector<int64_t> slot_pos_;  // by slot: position in history_
    std::vector<int32_t> history_;   // the conversation
    KvPolicyConfig policy_;
    std::vector<float> low_count_, prev_attention_;  // scissorhands statistics, by slot
    std::vector<SequenceEviction> evictions_;
    int64_t exit_layer_ = 0;
    PrefixCache* prefix_cache_ = nullptr;
    PrefillStats last_prefill_;
    // Reused batch scratch (no allocation per step once grown to max_batch).
    std::vector<int32_t> positions_, seq_ids_, rows_;
};

}  // namespace fluoro
