// The Engine's answers to ComputeLogitLens and ComputeAttentionOverview: a generated token of
// the live conversation's latest run located in its cache, and that position re-run (the lens:
// decode/logit_lens.h; the overview: runtime/attention_overview.h) with the user's attention
// capture swapped out — on a temporary cache where the conversation's no longer holds the
// window rows that position reads.
#include <algorithm>
#include <chrono>
#include <exception>
#include <numeric>

#include "core/error.h"
#include "decode/logit_lens.h"
#include "model/model.h"
#include "runtime/attention_overview.h"
#include "runtime/engine_state.h"

namespace fluoro {
namespace {

// The cache to re-run conversation position `pos` on: the conversation's own, or — where its
// sliding-window layers no longer hold the rows that position reads (KvShape::window_only) — a
// temporary one storing every token, filled by a prefill of the conversation up to `pos` (the
// same rows: the kernels do not depend on how a prefill is batched).
KvCache& rerun_cache(Model& model, KvCache& kv, std::span<const int32_t> tokens, int64_t pos,
                     std::unique_ptr<KvCache>& tmp) {
    const int64_t floor = kv.min_cut_length(0);
    if (floor == 0 || pos + 1 >= floor) return kv;
    const int64_t n = pos + 1;
    tmp = model.create_kv(n, 1, kv.shape().type);
    std::vector<int32_t> positions, seq;
    for (int64_t at = 0; at < n; at += model.max_batch()) {
        const int64_t m = std::min(model.max_batch(), n - at);
        positions.resize(size_t(m));
        std::iota(positions.begin(), positions.end(), int32_t(at));
        seq.assign(size_t(m), 0);
        const int32_t last = int32_t(m - 1);
        model.forward(Batch{tokens.subspan(size_t(at), size_t(m)), positions, seq,
                            std::span<const int32_t>(&last, 1)},
                      *tmp);
        tmp->set_length(0, at + m);
    }
    return *tmp;
}

}  // namespace

Engine::RunPosition Engine::rt_run_position(uint64_t run, int64_t token, int64_t offset,
                                            const char* what) const {
    const State& s = *state_;
    if (s.model_settings.backend != BackendKind::Cpu)
        throw Error(std::string(what) + " runs on the CPU backend only (this model runs on " +
                    std::string(s.backend->name()) + ")");
    const auto& t = s.lens_target;
    if (run == 0 || run != t.run)
        throw Error("run " + std::to_string(run) + " is not the live conversation's latest run" +
                    (t.run ? " (run " + std::to_string(t.run) + " is)" : std::string()) +
                    ": its tokens are no longer cached");
    if (token < 0 || token >= int64_t(t.tokens.size()))
        throw Error("run " + std::to_string(run) + " generated " + std::to_string(t.tokens.size()) +
                    " tokens: there is no token " + std::to_string(token));
    const int64_t pos = t.reply_start + token + offset;
    const std::vector<int32_t>& history = s.seq->tokens();
    const std::vector<int64_t>& slots = s.seq->slot_positions();
    if (offset == 0 && pos >= int64_t(history.size()))
        throw Error("token " + std::to_string(token) + " of run " + std::to_string(run) +
                    " was never fed to the model (a run's last token is sampled, not run)");
    bool cached = pos >= 0 && pos < int64_t(slots.size()) && slots[size_t(pos)] == pos &&
                  int64_t(history.size()) >= t.reply_start + token;
    for (int64_t j = 0; cached && j < token; ++j)
        cached = history[size_t(t.reply_start + j)] == t.tokens[size_t(j)];
    if (!cached)
        throw Error("the conversation's cache no longer holds run " + std::to_string(run) +
                    "'s tokens as they were generated (a KV policy evicted some, or the "
                    "conversation changed since)");
    return {pos, history[size_t(pos)], t.tokens[size_t(token)]};
}

void Engine::rt_logit_lens(const ComputeLogitLens& c) {
    State& s = *state_;
    auto ev = std::make_shared<LogitLensEvent>();
    ev->run = c.run;
    ev->token = c.token;
    try {
        // The prediction of reply token i is made at the position before it.
        const RunPosition at = rt_run_position(c.run, c.token, -1, "the logit lens");
        LensRequest req;
        req.seq = 0;
        req.slot = at.pos;
        req.token = at.input;
        req.target = at.generated;
        req.top_k = c.top_k;
        const auto t0 = std::chrono::steady_clock::now();
        {
            const CaptureSwap off(*s.backend, s.capture, nullptr);
            std::unique_ptr<KvCache> tmp;
            KvCache& kv = rerun_cache(*s.model, *s.kv, s.seq->tokens(), at.pos, tmp);
            ev->layers = logit_lens(*s.model, kv, req);
        }
        ev->ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                     .count();
        ev->position = at.pos;
        ev->input = at.input;
        ev->target = at.generated;
        const auto& tk = s.model->tokenizer();
        ev->input_piece = tk.token_to_piece(at.input, true);
        ev->target_piece = tk.token_to_piece(at.generated, true);
        for (const DistTop& l : ev->layers) {
            std::vector<std::string> texts;
            for (const TokenProb& p : l.top) texts.push_back(tk.token_to_piece(p.id, true));
            ev->pieces.push_back(std::move(texts));
        }
    } catch (const std::exception& e) {  // the dock waits for an answer: always send one
        ev->error = e.what();
        ev->layers.clear();
        ev->pieces.clear();
    }
    publish(std::shared_ptr<const LogitLensEvent>(std::move(ev)));
}

void Engine::rt_attention_overview(const ComputeAttentionOverview& c) {
    State& s = *state_;
    auto ev = std::make_shared<AttentionOverview>();
    ev->run = c.run;
    ev->token = c.token;
    try {
        const RunPosition at = rt_run_position(c.run, c.token, 0, "the attention overview");
        // The user's capture is swapped out; the overview sets and clears its own.
        const CaptureSwap off(*s.backend, s.capture, nullptr);
        std::unique_ptr<KvCache> tmp;
        KvCache& kv = rerun_cache(*s.model, *s.kv, s.seq->tokens(), at.pos, tmp);
        fill_attention_overview(*s.model, *s.backend, kv, 0, at.pos, s.seq->tokens(), *ev);
    } catch (const std::exception& e) {  // the dock waits for an answer: always send one
        ev->error = e.what();
        ev->heads.clear();
        ev->weights.clear();
    }
    publish(std::shared_ptr<const AttentionOverview>(std::move(ev)));
}

}  // namespace fluoro
