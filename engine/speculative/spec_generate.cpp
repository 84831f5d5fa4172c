#include "speculative/spec_generate.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "tokenizer/tokenizer.h"

namespace fluoro::spec {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

}  // namespace

GenerateResult generate_speculative(Sequence& seq, const tok::Tokenizer& tokenizer,
                                    std::span<const int32_t> prompt, Sampler& sampler,
                                    Drafter& drafter, const GenerateOptions& opt,
                                    const SpecOptions& spec, const SpecCallbacks& cb,
                                    const std::atomic<bool>* cancel) {
    const TokenCallback& on_token = cb.on_token;
    const SpecStepCallback& on_step = cb.on_step;
    if (spec.max_draft < 1 || spec.min_draft < 1 || spec.min_draft > spec.max_draft)
        throw Error("speculative: need 1 <= min_draft (" + std::to_string(spec.min_draft) +
                    ") <= max_draft (" + std::to_string(spec.max_draft) + ")");
    if (prompt.empty()) throw Error("the prompt is empty: nothing to compute");
    if (opt.constraint)
        throw Error("speculative decoding does not take a constraint (its drafts are not masked)");
    GenerateResult r;
    const auto start = Clock::now();
    // Everything but the prompt's last token is prefilled; the last one is the first step's
    // `pending` token, so the very first generated tokens are drafted and verified too.
    try {
        if (prompt.size() > 1) {
            seq.prefill(prompt.first(prompt.size() - 1), &r.prefill, cancel);
        } else {
            seq.truncate(0);
        }
    } catch (const Error&) {
        if (cancel && cancel->load()) {
            r.stop = StopReason::Cancelled;
            return r;
        }
        throw;
    }
    if (cb.on_prefilled) cb.on_prefilled();
    r.prefill.prompt_tokens = int64_t(prompt.size());
    r.prefill.computed_tokens += 1;  // the last prompt token, computed by the first step
    tok::StreamingDecoder detok(tokenizer, opt.render_special);
    Clock::time_point first_token_at{};
    // Emits one token; false when generation stops at it (r.stop set).
    const auto emit = [&](const SampledToken& s) {
        if (r.ttft_ms == 0 && r.tokens.empty()) {
            r.ttft_ms = ms_since(start);
            first_token_at = Clock::now();
        }
        if (tokenizer.vocab().is_eog(s.id)) {
            r.stop = StopReason::EndOfGeneration;
            return false;
        }
        r.tokens.push_back(s.id);
        const std::string piece = detok.push(s.id);
        r.text += piece;
        if (on_token) on_token(GeneratedToken{s.id, piece, &s, ms_since(start)});
        if (cut_at_stop_string(r, piece.size(), opt)) return false;
        if (int64_t(r.tokens.size()) >= opt.max_tokens) {
            r.stop = StopReason::MaxTokens;
            return false;
        }
        return true;
    };

    bool going = opt.max_tokens > 0;
    int32_t pending = prompt.back();  // the next token to feed (not yet in the KV cache)
    int32_t k = spec.max_draft;
    const bool greedy = sampler.greedy();
    Draft draft;
    std::vector<int32_t> context, batch, picks;
    std::vector<TokenDist> p;
    std::vector<SampledToken> chosen;  // greedy: each verified row's pick, with its report
    while (going) {
        if (cancel && cancel->load()) {
            r.stop = StopReason::Cancelled;
            break;
        }
        if (seq.remaining() <= 0) {
            r.stop = StopReason::ContextFull;
            break;
        }
        const int64_t budget = opt.max_tokens - int64_t(r.tokens.size());  // >= 1 here
        // The step emits up to n_max + 1 tokens and feeds pending + n_max of them.
        const int32_t n_max = int32_t(
            std::min<int64_t>({int64_t(k), seq.remaining() - 1, budget - 1, seq.max_extend() - 1}));
        SpecStepInfo info;
        const auto t_draft = Clock::now();
        context.assign(seq.tokens().begin(), seq.tokens().end());
        context.push_back(pending);
        if (n_max > 0) {
            drafter.propose(context, n_max, sampler.params(), draft);
        } else {
            draft.clear();
        }
        if (int32_t(draft.ids.size()) > std::max(n_max, 0)) {
            draft.ids.resize(size_t(std::max(n_max, 0)));
            draft.q.resize(draft.ids.size());
        }
        info.draft_ms = ms_since(t_draft);
        if (cb.on_drafted) cb.on_drafted(int32_t(draft.ids.size()));

        const auto t_verify = Clock::now();
        const int64_t base = int64_t(seq.tokens().size());
        batch.assign(1, pending);
        batch.insert(batch.end(), draft.ids.begin(), draft.ids.end());
        const std::span<const float> rows = seq.extend(batch);
        ++r.target_steps;
        const auto n_vocab = size_t(sampler.n_vocab());
        const auto row = [&](size_t i) { return rows.subspan(i * n_vocab, n_vocab); };
        const auto history = [&](size_t i) {  // what the token at row i sees: up to batch[i]
            return std::span<const int32_t>(seq.tokens()).first(size_t(base) + 1 + i);
        };
        // Target distributions, computed only as far as the verdict needs them when greedy.
        p.resize(batch.size());
        Verdict v;
        size_t n_known = batch.size();  // rows whose p was computed
        if (greedy) {
            // Picks after the first mismatch cannot change the verdict: -1 never matches. Every
            // row read here is emitted (the accepted drafts, then the target's own pick) and
            // greedy emits each row's argmax, so the row's sample() is its report as well.
            picks.assign(batch.size(), -1);
            chosen.clear();
            for (size_t i = 0; i < batch.size(); ++i) {
                chosen.push_back(sampler.sample(row(i), history(i)));
                picks[i] = chosen.back().id;
                p[i].ids.assign(1, picks[i]);  // a point mass, in place
                p[i].probs.assign(1, 1.0);
                if (i < draft.ids.size() && draft.ids[i] != picks[i]) {
                    n_known = i + 1;
                    break;
                }
            }
            v = verify_greedy(draft.ids, picks);
        } else {
            for (size_t i = 0; i < batch.size(); ++i)
                sampler.distribution(row(i), history(i), p[i]);
            v = verify_sampled(draft.ids, draft.q, p, sampler);
        }
        info.verify_ms = ms_since(t_verify);
        r.drafted_tokens += int64_t(draft.ids.size());
        r.accepted_tokens += v.accepted;
        if (on_step) {
            info.drafted = draft.ids;
            for (size_t i = 0; i < draft.ids.size(); ++i) {
                info.q.push_back(float(draft.q[i].prob(draft.ids[i])));
                info.p.push_back(i < n_known ? float(p[i].prob(draft.ids[i])) : 0.0f);
            }
            info.accepted = v.accepted;
            info.next = v.next;
            info.kind = v.kind;
            on_step(info);
        }

        // Emit the accepted drafts and the target's token; the cache keeps what was fed.
        int64_t kept = base + 1;  // pending is now in the cache
        for (int32_t j = 0; j <= v.accepted && going; ++j) {
            const int32_t id = j < v.accepted ? draft.ids[size_t(j)] : v.next;
            const SampledToken s =
                greedy ? chosen[size_t(j)] : sampler.report(row(size_t(j)), history(size_t(j)), id);
            going = emit(s);
            if (going && j < v.accepted) ++kept;
        }
        seq.truncate(kept);
        pending = v.next;
        if (spec.adaptive) {
            k = v.accepted == int32_t(draft.ids.size()) && !draft.ids.empty()
                    ? spec.max_draft
                    : std::max(spec.min_draft, v.accepted + 1);
        }
    }
    if (const std::string tail = detok.flush(); !tail.empty() && r.stop != StopReason::StopString) {
        r.text += tail;
        if (on_token) on_token(GeneratedToken{-1, tail, nullptr, ms_since(start)});
    }
    r.decode_steps = std::max<int64_t>(int64_t(r.tokens.size()) - 1, 0);
    if (r.decode_steps > 0) r.decode_ms = ms_since(first_token_at);
    return r;
}

}  // namespace fluoro::spec
