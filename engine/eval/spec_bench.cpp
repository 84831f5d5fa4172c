#include "eval/spec_bench.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "chat/chat_options.h"
#include "core/error.h"
#include "decode/chat_tokenize.h"
#include "eval/spec_bench_prompts.h"
#include "model/model.h"

namespace fluoro::spec {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double ratio(double a, double b) {
    return b > 0 ? a / b : 0;
}

SamplingParams greedy() {
    SamplingParams sp;
    sp.temperature = 0.0f;
    sp.n_probs = 0;
    return sp;
}

// The token a speculative run stopped at when it ended at an end-of-generation token: the one
// after its output in the stream of emitted tokens (each step's accepted drafts, then its own).
std::optional<int32_t> end_of_generation(const GenerateResult& r,
                                         const std::vector<SpecStepInfo>& steps) {
    if (r.stop != StopReason::EndOfGeneration) return std::nullopt;
    std::vector<int32_t> stream;
    for (const SpecStepInfo& s : steps) {
        stream.insert(stream.end(), s.drafted.begin(), s.drafted.begin() + s.accepted);
        stream.push_back(s.next);
    }
    if (stream.size() <= r.tokens.size()) return std::nullopt;
    return stream[r.tokens.size()];
}

struct Totals {
    int64_t prompts = 0, tokens = 0, drafted = 0, accepted = 0, steps = 0;
    double plain_ms = 0, spec_ms = 0, draft_ms = 0;
    double copied_tokens = 0;
    std::vector<int64_t> drafted_at, accepted_at;
};

}  // namespace

// One forward over k + 1 tokens after `prompt`, relative to k = 0 (spec_bench.h). Each
// round times every k once, after a first round that only warms up, and each k's median over the
// rounds counts: timing one k after another put the one-token forward first, right after the
// prefill, where it ran slow enough to give v(1) < 1 on some hosts.
std::vector<double> measure_verify_cost(Model& model, KvCache& kv, std::span<const int32_t> prompt,
                                        int32_t max_k) {
    Sequence seq(model, kv, 0);
    seq.prefill(prompt);
    const int64_t base = int64_t(seq.tokens().size());
    std::vector<int32_t> tokens(size_t(max_k) + 1);
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = prompt[i % prompt.size()];
    constexpr int kRounds = 7;
    std::vector<std::vector<double>> samples(size_t(max_k) + 1);
    for (int round = 0; round <= kRounds; ++round) {
        for (int32_t k = 0; k <= max_k; ++k) {
            seq.truncate(base);
            const auto t = Clock::now();
            seq.extend(std::span<const int32_t>(tokens).first(size_t(k) + 1));
            if (round > 0) samples[size_t(k)].push_back(ms_since(t));
        }
    }
    std::vector<double> ms;
    for (std::vector<double>& s : samples) ms.push_back(median(s));
    std::vector<double> v;
    for (const double m : ms) v.push_back(m / ms[0]);
    return v;
}

double copied_fraction(std::span<const int32_t> prompt, std::span<const int32_t> output,
                       int32_t n) {
    if (n < 1) throw Error("copied_fraction: the run length must be at least 1");
    if (output.empty()) return 0;
    std::vector<int32_t> all(prompt.begin(), prompt.end());
    all.insert(all.end(), output.begin(), output.end());
    const size_t run = size_t(n);
    int64_t copied = 0;
    for (size_t i = prompt.size(); i < all.size(); ++i) {
        if (i + 1 < run) continue;
        const auto tail = std::span<const int32_t>(all).subspan(i + 1 - run, run);
        // An earlier run: starting at s < i + 1 - run, wholly before position i.
        for (size_t s = 0; s + run <= i; ++s) {
            if (std::equal(tail.begin(), tail.end(), all.begin() + ptrdiff_t(s))) {
                ++copied;
                break;
            }
        }
    }
    return double(copied) / double(output.size());
}

SpecBenchResult run_spec_bench(Model& target, KvCache& kv, std::span<Drafter* const> drafters,
                               const SpecBenchOptions& opt) {
    if (opt.n_gen < 1 || opt.repetitions < 1)
        throw Error("bench spec: n_gen and repetitions must be at least 1");
    struct Prompt {
        std::string category;
        std::vector<int32_t> tokens;
        int32_t index;
        std::optional<double> reference_copied;
    };
    std::vector<Prompt> prompts;
    const std::vector<BenchPrompt>& all = opt.prompts.empty() ? spec_bench_prompts() : opt.prompts;
    for (size_t i = 0; i < all.size(); ++i) {
        const BenchPrompt& p = all[i];
        if (!opt.categories.empty() && std::find(opt.categories.begin(), opt.categories.end(),
                                                 p.category) == opt.categories.end())
            continue;
        const std::vector<ChatMessage> messages{{"user", p.text}};
        Prompt entry{p.category, tokenize_chat(target, messages, true), int32_t(i), {}};
        if (!p.reference.empty())
            entry.reference_copied =
                copied_fraction(entry.tokens, target.tokenizer().encode(p.reference, false, false));
        prompts.push_back(std::move(entry));
    }
    if (prompts.empty()) throw Error("bench spec: no prompts in the chosen categories");

    SpecBenchResult result;
    result.verify_cost =
        measure_verify_cost(target, kv, prompts.front().tokens, opt.spec.max_draft);

    std::map<std::pair<std::string, std::string>, Totals> totals;  // (drafter, category)
    std::vector<double> verify_ms_at(result.verify_cost.size(), 0.0);
    result.verify_steps_in_loop.assign(result.verify_cost.size(), 0);
    double plain_ms_all = 0;
    int64_t plain_tokens_all = 0;
    Sequence seq(target, kv, 0);
    GenerateOptions go;
    go.max_tokens = opt.n_gen;
    const auto n_vocab = int32_t(target.n_vocab());
    const auto pairs = int64_t(prompts.size() * drafters.size());
    int64_t pairs_done = 0;
    for (const auto& [category, prompt, index, reference_copied] : prompts) {
        for (Drafter* d : drafters) {
            if (opt.progress) opt.progress(pairs_done++, pairs);
            Totals& t = totals[{std::string(d->name()), category}];
            ++t.prompts;
            Totals one;  // this prompt's share
            std::vector<int32_t> output;
            std::optional<int32_t> end_token;
            for (int32_t rep = 0; rep < opt.repetitions; ++rep) {
                // Plain, then speculative, on a cache emptied each time (no reuse between them).
                seq.reset();
                Sampler s1(greedy(), n_vocab);
                auto t0 = Clock::now();
                const GenerateResult plain = generate(seq, target.tokenizer(), prompt, s1, go);
                const double plain_ms = ms_since(t0) - plain.prefill.ms;
                seq.reset();
                Sampler s2(greedy(), n_vocab);
                std::vector<SpecStepInfo> steps;
                t0 = Clock::now();
                SpecCallbacks cb;
                cb.on_step = [&](const SpecStepInfo& i) { steps.push_back(i); };
                const GenerateResult sp =
                    generate_speculative(seq, target.tokenizer(), prompt, s2, *d, go, opt.spec, cb);
                const double spec_ms = ms_since(t0) - sp.prefill.ms;
                if (sp.tokens != plain.tokens)
                    throw Error("bench spec: drafter " + std::string(d->name()) +
                                " changed the greedy output (a bug: please report it)");
                output = plain.tokens;
                end_token = end_of_generation(sp, steps);
                const auto n_out = int64_t(plain.tokens.size());
                const double copied = copied_fraction(prompt, plain.tokens) * double(n_out);
                for (Totals* x : {&t, &one}) {
                    x->tokens += n_out;
                    x->copied_tokens += copied;
                    x->plain_ms += plain_ms;
                    x->spec_ms += spec_ms;
                    x->drafted += sp.drafted_tokens;
                    x->accepted += sp.accepted_tokens;
                    x->steps += sp.target_steps;
                }
                plain_ms_all += plain_ms;
                plain_tokens_all += int64_t(plain.tokens.size());
                for (const SpecStepInfo& i : steps) {
                    t.draft_ms += i.draft_ms;
                    if (i.drafted.size() < verify_ms_at.size()) {
                        verify_ms_at[i.drafted.size()] += i.verify_ms;
                        ++result.verify_steps_in_loop[i.drafted.size()];
                    }
                    if (t.drafted_at.size() < i.drafted.size()) {
                        t.drafted_at.resize(i.drafted.size());
                        t.accepted_at.resize(i.drafted.size());
                    }
                    for (size_t pos = 0; pos < i.drafted.size(); ++pos) {
                        ++t.drafted_at[pos];
                        if (int32_t(pos) < i.accepted) ++t.accepted_at[pos];
                    }
                }
            }
            SpecBenchPromptRow pr;
            pr.drafter = std::string(d->name());
            pr.category = category;
            pr.prompt = index;
            pr.tokens = one.tokens;
            pr.copied = ratio(one.copied_tokens, double(one.tokens));
            pr.acceptance = ratio(double(one.accepted), double(one.drafted));
            pr.tau = ratio(double(one.tokens), double(one.steps));
            pr.speedup = ratio(one.plain_ms, one.spec_ms);  // same tokens: time ratio
            pr.reference_copied = reference_copied;
            pr.drafted = one.drafted;
            pr.accepted = one.accepted;
            pr.target_steps = one.steps;
            pr.prompt_tokens = prompt;
            pr.output_tokens = std::move(output);
            pr.end_token = end_token;
            result.prompts.push_back(std::move(pr));
        }
    }
    result.target_token_ms = plain_tokens_all > 0 ? plain_ms_all / double(plain_tokens_all) : 0;
    for (size_t k = 0; k < verify_ms_at.size(); ++k) {
        const auto n = double(result.verify_steps_in_loop[k]);
        result.verify_cost_in_loop.push_back(
            n > 0 ? ratio(verify_ms_at[k] / n, result.target_token_ms) : 0.0);
    }

    // Categories in the order the prompt sets list them, each once.
    std::vector<std::string> categories;
    for (const auto& entry : prompts)
        if (std::find(categories.begin(), categories.end(), entry.category) == categories.end())
            categories.push_back(entry.category);
    for (Drafter* d : drafters) {
        for (const std::string& category : categories) {
            const auto it = totals.find({std::string(d->name()), category});
            if (it == totals.end()) continue;
            const Totals& t = it->second;
            SpecBenchRow r;
            r.drafter = std::string(d->name());
            r.category = category;
            r.prompts = t.prompts;
            r.tokens = t.tokens;
            r.copied = ratio(t.copied_tokens, double(t.tokens));
            r.drafted = t.drafted;
            r.accepted = t.accepted;
            r.target_steps = t.steps;
            r.acceptance = t.drafted > 0 ? double(t.accepted) / double(t.drafted) : 0;
            r.tau = t.steps > 0 ? double(t.tokens) / double(t.steps) : 0;
            r.mean_draft = t.steps > 0 ? double(t.drafted) / double(t.steps) : 0;
            for (size_t pos = 0; pos < t.drafted_at.size(); ++pos)
                r.accept_by_position.push_back(t.drafted_at[pos] > 0 ? double(t.accepted_at[pos]) /
                                                                           double(t.drafted_at[pos])
                                                                     : 0);
            r.plain_tps = t.plain_ms > 0 ? 1000.0 * double(t.tokens) / t.plain_ms : 0;
            r.spec_tps = t.spec_ms > 0 ? 1000.0 * double(t.tokens) / t.spec_ms : 0;
            r.speedup = r.plain_tps > 0 ? r.spec_tps / r.plain_tps : 0;
            const double per_token = t.tokens > 0 ? t.plain_ms / double(t.tokens) : 0;
            r.draft_cost =
                t.drafted > 0 && per_token > 0 ? (t.draft_ms / double(t.drafted)) / per_token : 0;
            // Linear interpolation of v at the mean draft length.
            const double g = std::clamp(r.mean_draft, 0.0, double(result.verify_cost.size() - 1));
            const size_t lo = size_t(g), hi = std::min(lo + 1, result.verify_cost.size() - 1);
            const double v = result.verify_cost[lo] +
                             (g - double(lo)) * (result.verify_cost[hi] - result.verify_cost[lo]);
            r.expected_speedup = r.tau / (r.mean_draft * r.draft_cost + v);
            result.rows.push_back(r);
        }
    }
    return result;
}

}  // namespace fluoro::spec
