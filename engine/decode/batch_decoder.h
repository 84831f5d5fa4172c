// Continuous batching: up to `n_slots` sequences of one model generate at once over one paged KV
// cache (slot s is the cache's sequence s; a prefix cache, if any, holds the sequences after
// them). Each step() is one Model::forward: the next token of every decoding sequence, then
// chunks of the prompts still being computed, oldest first, within the step's prefill budget —
// so a long prompt is computed over several steps while the others keep decoding (vLLM's chunked
// prefill). Jobs join (start) and leave (end, cancel, fail) between steps.
//
// Every matmul row and, with the default flash attention, every attention row is computed from
// its own input the same way whatever else the batch holds (batch-invariant: the flash kernel cuts
// a row's keys into ranges from its first key, not by batch size), and each sequence keeps its own
// sampler, detokenizer and stop rules (TokenLoop, decode/generate.h): a sequence's logits and
// tokens are the same alone or batched (tests/engine/decode/batch_decoder_test.cpp). The standard
// attention (AttentionImpl::Standard) splits a decode step's keys by the batch's size, so there
// the last bits may differ past 128 keys.
//
// Sequences run under the Full KV policy (an evicting policy compacts a sequence between steps,
// which no batch accounts for). Not thread-safe: one thread drives it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "decode/generate.h"
#include "sampling/sampling_params.h"

namespace fluoro {

class Model;
class KvCache;
class PrefixCache;

struct BatchJob {
    std::vector<int32_t> prompt;
    SamplingParams sampling;
    GenerateOptions options;  // its constraint, if any, is the caller's and must outlive the job
    TokenCallback on_token;   // called on step()'s thread
    const std::atomic<bool>* cancel = nullptr;  // read at every step; the caller's
    uint64_t tag = 0;                           // the caller's name for the job, handed back
};

struct BatchEnded {
    uint64_t tag = 0;
    int64_t slot = -1;
    GenerateResult result;  // what the job made; stop Cancelled when cancelled
    std::string error;      // non-empty: the job failed with this message
};

// What one step computed, by job: the scheduler's view.
struct BatchStepPart {
    uint64_t tag = 0;
    int64_t slot = -1;
    int64_t tokens = 0;        // tokens this job put in the step
    bool prefill = false;      // a chunk of its prompt (else its next token)
    bool prompt_done = false;  // the chunk ended the prompt (its last row gave logits)
    int64_t kv_tokens = 0;     // tokens its sequence caches after the step
};
struct BatchStep {
    int64_t index = 0;                                // steps since the decoder was made
    std::chrono::steady_clock::time_point started{};  // when step() began
    std::vector<BatchStepPart> parts;
    int64_t tokens = 0, decode_tokens = 0, prefill_tokens = 0;
    double forward_ms = 0;  // Model::forward's wall time
    double ms = 0;          // the whole step's: batching, forward, sampling, streaming
};

class BatchDecoder {
  public:
    struct Options {
        int64_t n_slots = 4;
        // Prompt tokens one step computes at most (over every prefilling job); the step's decode
        // tokens come on top, within the model's batch.
        int64_t prefill_chunk = 256;
    };
    // kv: a paged or contiguous cache with at least opt.n_slots sequences; prefix: a prefix cache
    // over kv's sequences from opt.n_slots on, or null. The model must return at least opt.n_slots
    // logit rows per forward (ModelLoadOptions::max_logit_rows). Throws Error otherwise.
    BatchDecoder(Model& model, KvCache& kv, PrefixCache* prefix, Options opt);
    ~BatchDecoder();
    BatchDecoder(const BatchDecoder&) = delete;
    BatchDecoder& operator=(const BatchDecoder&) = delete;

    const Options& options() const { return opt_; }
    int64_t active() const;  // jobs started and not ended
    bool has_free_slot() const { return active() < opt_.n_slots; }
    // Takes a free slot — the one whose cached conversation shares most with the prompt — and
    // keeps what is cached of the prompt there or in the prefix cache (Sequence::reuse_prefix).
    // Returns the slot. Throws Error (ContextOverflowError for a prompt over the context; no
    // slot free) and then starts nothing.
    int64_t start(BatchJob job);
    // One forward step over the active jobs (nothing when none); returns the jobs that ended in
    // it, cancelled ones first (without computing for them). A forward that fails ends every job
    // in it with the error; a failed job's sequence forgets what it cached, and the prefix cache
    // is emptied (a NaN may come from any row the step read). `step` (optional) receives what
    // the step computed.
    std::vector<BatchEnded> step(BatchStep* step = nullptr);
    // Ends every active job as cancelled (for a shutdown).
    std::vector<BatchEnded> cancel_all();
    // The cached tokens of a slot's sequence.
    int64_t cached_tokens(int64_t slot) const;
    // The prefill statistics of the job in `slot` (what start() reused; its time once the
    // prompt is computed). The slot must hold a job.
    const PrefillStats& prefill_stats(int64_t slot) const;

  private:
    struct Job;
    struct Slot;
    BatchEnded end(Slot& slot, bool cancelled, std::string error = {});
    void cache_prefix(Slot& slot);

    Model& model_;
    KvCache& kv_;
    PrefixCache* prefix_;
    Options opt_;
    std::vector<Slot> slots_;
    uint64_t started_ = 0;  // jobs started: their order of arrival (prefill is first come)
    int64_t steps_ = 0;
    // Reused batch scratch (no allocation per step once grown).
    std::vector<int32_t> tokens_, positions_, seq_ids_, rows_;
    std::vector<Slot*> prefilling_;
};

}  // namespace fluoro
