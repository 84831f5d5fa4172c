// The Engine's state, shared by its source files (engine.cpp: commands and runs;
// engine_readouts.cpp: attention capture, KV snapshots, the prompt cache's event;
// engine_inspect.cpp: the logit lens and the attention overview). Internal to engine/runtime.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "decode/json_constraint.h"
#include "decode/sequence.h"
#include "kv/prefix_cache.h"
#include "model/model.h"
#include "runtime/engine.h"
#include "runtime/prefix_cache_persistence.h"
#include "sampling/sampler.h"
#include "speculative/drafter.h"
#include "telemetry/profiling_backend.h"

namespace fluoro {

// Puts `replacement` (null: nothing) in place of the user's attention capture for its lifetime,
// then the user's back (when it asks for anything): passes that are not the conversation's steps
// — drafting, re-running a position for the lens or the overview — must not feed or disturb it.
class CaptureSwap {
  public:
    CaptureSwap(Backend& backend, AttentionCapture& user, AttentionCapture* replacement)
        : backend_(backend), user_(user) {
        backend_.set_attention_capture(replacement);
    }
    ~CaptureSwap() { backend_.set_attention_capture(user_.active() ? &user_ : nullptr); }
    CaptureSwap(const CaptureSwap&) = delete;
    CaptureSwap& operator=(const CaptureSwap&) = delete;

  private:
    Backend& backend_;
    AttentionCapture& user_;
};

struct Engine::State {
    // Model side (all null when no model is loaded). Destroyed in reverse order: the sequence and
    // KV before the model, the model before the backends it calls.
    std::unique_ptr<Backend> backend;
    std::unique_ptr<ProfilingBackend> profiling;
    std::unique_ptr<Model> model;
    std::unique_ptr<KvCache> kv;
    std::unique_ptr<PrefixCache> prefix_cache;           // over kv's sequences 1..
    std::unique_ptr<PrefixCachePersistence> cache_file;  // when ModelSettings asks for one
    std::unique_ptr<Sequence> seq;
    std::unique_ptr<Sampler> sampler;
    std::string model_path;
    ModelSettings model_settings;
    int64_t ctx = 0;

    // Settings.
    SamplingParams sampling;
    int64_t max_tokens = 512;
    std::vector<std::string> stop_strings;  // the running Complete's; empty otherwise
    bool json_object = false;               // the running Complete's (Complete::json_object)
    // Each token's bytes for constrained decoding, computed at the first constrained run of the
    // loaded model (decode/json_constraint.h); reset with the model.
    std::shared_ptr<const ConstraintVocab> constraint_vocab;
    bool raw = false;   // the running Complete's: a plain-text prompt
    ChatExtras extras;  // the running Complete's: tools, enable_thinking

    // Conversation.
    uint64_t conversation = 0;  // 0: none yet
    std::string system_prompt;
    std::vector<ChatMessage> messages;

    uint64_t last_conversation = 0;
    uint64_t last_run = 0;
    uint64_t submission = 0;  // the running command's, for its RunStarted and ErrorEvents

    // Attention capture: what was asked (kept across model loads) and the backend's request and
    // results (backend/attention_capture.h), drained at the end of every step.
    SetAttentionCapture capture_cmd;
    AttentionCapture capture;

    // A mixture of experts' routing during a run (Model::set_expert_sink), drained at every
    // step's end into the StepEvent (RunProbes::take_experts).
    ExpertChoices experts;

    // The latest run's reply, for the logit lens (ComputeLogitLens): its id, the conversation
    // position its first token took, and its tokens. Checked against the sequence's history
    // before use, so a conversation changed since is refused rather than misread.
    struct LensTarget {
        uint64_t run = 0;
        int64_t reply_start = 0;
        std::vector<int32_t> tokens;
    } lens_target;

    // Speculative decoding: the settings, and what they need, built at the first run after a
    // change (drafter last: it refers to the models and caches).
    SpeculativeSettings spec;
    KvPolicyConfig kv_policy;
    std::unique_ptr<Model> draft_model;
    std::unique_ptr<KvCache> draft_kv;
    std::unique_ptr<spec::Drafter> drafter;

    // The prefill's prompt-cache telemetry (what the sequence's last prefill reused and why, and
    // the prefix cache's tree after it; engine_readouts.cpp). prompt_tokens: the whole prompt (a
    // speculative prefill leaves its last token to the first verification).
    PrefixCacheEvent prefix_event(uint64_t run, int64_t prompt_tokens, int64_t t_ns) const;

    void drop_drafter() {
        drafter.reset();
        draft_kv.reset();
        draft_model.reset();
    }

    void drop_model() {
        drop_drafter();
        sampler.reset();
        seq.reset();
        cache_file.reset();
        prefix_cache.reset();
        kv.reset();
        model.reset();
        constraint_vocab.reset();
        profiling.reset();
        backend.reset();
        model_path.clear();
    }
};

}  // namespace fluoro
