#include "decode/batch_decoder.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "kv/kv_cache.h"
#include "kv/prefix_cache.h"
#include "model/model.h"
#include "sampling/sampler.h"

namespace fluoro {

namespace {
using Clock = std::chrono::steady_clock;
double ms_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}
}  // namespace

struct BatchDecoder::Job {
    Job(BatchJob j, const Model& model)
        : spec(std::move(j)),
          sampler(spec.sampling, int32_t(model.n_vocab())),
          loop(model.tokenizer(), sampler, spec.options, Clock::now()) {}
    BatchJob spec;
    Sampler sampler;
    TokenLoop loop;  // refers to sampler and spec.options: a Job never moves (unique_ptr)
    uint64_t order = 0;
    size_t computed = 0;  // prompt tokens cached so far (reused ones included)
    bool decoding = false;
    int32_t next = -1;  // decoding: the token the next step appends
    // This step: where its tokens start in the batch and how many; its logit row (-1: none).
    size_t batch_at = 0, batch_n = 0;
    int64_t row = -1;
};

struct BatchDecoder::Slot {
    std::unique_ptr<Sequence> seq;
    std::unique_ptr<Job> job;
};

BatchDecoder::BatchDecoder(Model& model, KvCache& kv, PrefixCache* prefix, Options opt)
    : model_(model), kv_(kv), prefix_(prefix), opt_(opt) {
    if (opt_.n_slots < 1) throw Error("continuous batching needs at least one slot");
    if (opt_.prefill_chunk < 1)
        throw Error("the prefill chunk must be at least 1 token, not " +
                    std::to_string(opt_.prefill_chunk));
    if (kv.shape().n_seq < opt_.n_slots)
        throw Error(std::to_string(opt_.n_slots) +
                    " slots need as many KV sequences; the cache has " +
                    std::to_string(kv.shape().n_seq));
    if (model.max_logit_rows() < opt_.n_slots)
        throw Error(std::to_string(opt_.n_slots) + " slots need " + std::to_string(opt_.n_slots) +
                    " logit rows per step; the model was loaded with " +
                    std::to_string(model.max_logit_rows()));
    if (model.max_batch() < opt_.n_slots)
        throw Error(std::to_string(opt_.n_slots) +
                    " slots need a batch of at least as many tokens (" +
                    std::to_string(model.max_batch()) + ")");
    slots_.resize(size_t(opt_.n_slots));
    for (int64_t s = 0; s < opt_.n_slots; ++s) {
        auto seq = std::make_unique<Sequence>(model, kv, s);
        seq->set_prefix_cache(prefix);
        slots_[size_t(s)].seq = std::move(seq);
    }
    const auto n = size_t(model.max_batch());
    tokens_.reserve(n);
    positions_.reserve(n);
    seq_ids_.reserve(n);
    rows_.reserve(size_t(opt_.n_slots));
}

BatchDecoder::~BatchDecoder() = default;

int64_t BatchDecoder::active() const {
    return std::count_if(slots_.begin(), slots_.end(),
                         [](const Slot& s) { return s.job != nullptr; });
}

int64_t BatchDecoder::cached_tokens(int64_t slot) const {
    if (slot < 0 || slot >= int64_t(slots_.size())) return 0;
    return slots_[size_t(slot)].seq->next_slot();
}

const PrefillStats& BatchDecoder::prefill_stats(int64_t slot) const {
    const Slot& s = slots_.at(size_t(slot));
    if (!s.job) throw Error("slot " + std::to_string(slot) + " holds no job");
    return s.job->loop.result().prefill;
}

int64_t BatchDecoder::start(BatchJob job) {
    // The free slot already holding the longest prefix of the prompt (llama-server's slot
    // similarity): without a prefix cache the only reuse there is.
    int64_t best = -1;
    size_t best_common = 0;
    for (size_t s = 0; s < slots_.size(); ++s) {
        if (slots_[s].job) continue;
        const std::vector<int32_t>& held = slots_[s].seq->tokens();
        size_t common = 0;
        const size_t limit = std::min(held.size(), job.prompt.size());
        while (common < limit && held[common] == job.prompt[common]) ++common;
        if (best < 0 || common > best_common) {
            best = int64_t(s);
            best_common = common;
        }
    }
    if (best < 0)
        throw Error("every one of the " + std::to_string(slots_.size()) + " slots is busy");
    Slot& slot = slots_[size_t(best)];
    auto j = std::make_unique<Job>(std::move(job), model_);
    j->computed = slot.seq->reuse_prefix(j->spec.prompt, j->loop.result().prefill);
    j->order = ++started_;
    if (prefix_ != nullptr) {
        // Room for every live sequence to reach the context at once (the cache gives way).
        std::vector<int64_t> live;
        for (size_t s = 0; s < slots_.size(); ++s)
            if (slots_[s].job || int64_t(s) == best) live.push_back(int64_t(s));
        prefix_->reserve_for(live);
    }
    slot.job = std::move(j);
    return best;
}

void BatchDecoder::cache_prefix(Slot& slot) {
    if (prefix_ == nullptr) return;
    if (const auto held = slot.seq->prefix_cacheable(); !held.empty())
        prefix_->store(held, int64_t(&slot - slots_.data()));
}

BatchEnded BatchDecoder::end(Slot& slot, bool cancelled, std::string error) {
    Job& j = *slot.job;
    BatchEnded e;
    e.tag = j.spec.tag;
    e.slot = int64_t(&slot - slots_.data());
    if (!j.decoding && error.empty()) {
        // Ended during its prefill: what was computed stays cached; no token was made.
        j.loop.result().stop = StopReason::Cancelled;
        e.result = std::move(j.loop.result());
    } else {
        e.result = std::move(j.loop.finish(j.spec.on_token, cancelled));
    }
    e.error = std::move(error);
    if (e.error.empty()) {
        cache_prefix(slot);
    } else {
        slot.seq->reset();
        if (prefix_ != nullptr) prefix_->clear();
    }
    slot.job.reset();
    return e;
}

std::vector<BatchEnded> BatchDecoder::cancel_all() {
    std::vector<BatchEnded> out;
    for (Slot& s : slots_)
        if (s.job) out.push_back(end(s, true));
    return out;
}

std::vector<BatchEnded> BatchDecoder::step(BatchStep* info) {
    const auto started = Clock::now();
    if (info) info->parts.clear();  // stays empty when no forward runs
    std::vector<BatchEnded> ended;
    for (Slot& s : slots_)
        if (s.job && s.job->spec.cancel && s.job->spec.cancel->load())
            ended.push_back(end(s, true));

    // Decodes first (one token each), then prompt chunks, oldest job first.
    tokens_.clear();
    positions_.clear();
    seq_ids_.clear();
    rows_.clear();
    const auto add = [&](Slot& s, std::span<const int32_t> toks) {
        Job& j = *s.job;
        j.batch_at = tokens_.size();
        j.batch_n = toks.size();
        const int64_t first = s.seq->next_slot();
        for (size_t i = 0; i < toks.size(); ++i) {
            tokens_.push_back(toks[i]);
            positions_.push_back(int32_t(first + int64_t(i)));
            seq_ids_.push_back(int32_t(&s - slots_.data()));
        }
    };
    std::vector<Slot*>& prefilling = prefilling_;
    prefilling.clear();
    for (Slot& s : slots_) {
        if (!s.job) continue;
        s.job->batch_n = 0;
        s.job->row = -1;
        if (s.job->decoding) {
            add(s, std::span<const int32_t>(&s.job->next, 1));
            s.job->row = int64_t(rows_.size());
            rows_.push_back(int32_t(s.job->batch_at));
        } else {
            prefilling.push_back(&s);
        }
    }
    std::sort(prefilling.begin(), prefilling.end(),
              [](const Slot* a, const Slot* b) { return a->job->order < b->job->order; });
    int64_t budget = std::min(opt_.prefill_chunk, model_.max_batch() - int64_t(tokens_.size()));
    for (Slot* s : prefilling) {
        if (budget <= 0) break;
        Job& j = *s->job;
        const auto& prompt = j.spec.prompt;
        const auto n = size_t(std::min<int64_t>(budget, int64_t(prompt.size() - j.computed)));
        add(*s, std::span<const int32_t>(prompt).subspan(j.computed, n));
        budget -= int64_t(n);
        if (j.computed + n == prompt.size()) {
            j.row = int64_t(rows_.size());
            rows_.push_back(int32_t(j.batch_at + n - 1));
        }
    }
    if (tokens_.empty()) return ended;

    const Batch batch{tokens_, positions_, seq_ids_, rows_};
    std::span<const float> logits;
    const auto t0 = Clock::now();
    try {
        logits = model_.forward(batch, kv_);
    } catch (const std::exception& e) {
        // What the failed step wrote is not cached (appended() never ran): each sequence still
        // holds what it held before the step.
        for (Slot& s : slots_)
            if (s.job && s.job->batch_n > 0) ended.push_back(end(s, false, e.what()));
        return ended;
    }
    const auto t1 = Clock::now();
    if (info) {
        std::vector<BatchStepPart> parts = std::move(info->parts);  // keeps its capacity
        parts.clear();
        *info = BatchStep{};
        info->parts = std::move(parts);
        info->index = steps_;
        info->started = started;
        info->tokens = int64_t(tokens_.size());
        info->forward_ms = ms_between(t0, t1);
    }
    ++steps_;

    const int64_t n_vocab = model_.n_vocab();
    for (Slot& s : slots_) {
        if (!s.job || s.job->batch_n == 0) continue;
        Job& j = *s.job;
        s.seq->appended(std::span<const int32_t>(tokens_).subspan(j.batch_at, j.batch_n));
        const bool was_prefill = !j.decoding;
        if (was_prefill) j.computed += j.batch_n;
        if (info) {
            BatchStepPart p;
            p.tag = j.spec.tag;
            p.slot = int64_t(&s - slots_.data());
            p.tokens = int64_t(j.batch_n);
            p.prefill = was_prefill;
            p.prompt_done = was_prefill && j.row >= 0;
            p.kv_tokens = s.seq->next_slot();
            (was_prefill ? info->prefill_tokens : info->decode_tokens) += p.tokens;
            info->parts.push_back(p);
        }
        if (j.row < 0) continue;  // a prompt chunk short of its end
        if (was_prefill) {
            PrefillStats& st = j.loop.result().prefill;
            st.ms = j.loop.ms_since_start();
            s.seq->set_last_prefill(st);
            cache_prefix(s);  // a shared system prompt serves the next arrivals at once
            j.decoding = true;
        } else {
            j.loop.stepped();
        }
        const auto row = logits.subspan(size_t(j.row) * size_t(n_vocab), size_t(n_vocab));
        try {
            if (const std::optional<int32_t> next = j.loop.next(row, *s.seq, j.spec.on_token))
                j.next = *next;
            else
                ended.push_back(end(s, false));
        } catch (const std::exception& e) {
            ended.push_back(end(s, false, e.what()));
        }
    }
    if (info) info->ms = ms_between(started, Clock::now());
    return ended;
}

}  // namespace fluoro
