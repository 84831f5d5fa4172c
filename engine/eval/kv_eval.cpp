#include "eval/kv_eval.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>

#include "backend/attention_capture.h"
#include "chat/chat_options.h"
#include "core/error.h"
#include "decode/chat_tokenize.h"
#include "decode/sequence.h"
#include "model/model.h"

namespace fluoro {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// -log softmax(logits)[target], in double (as eval/perplexity.cpp).
double nll(std::span<const float> logits, int32_t target) {
    const float max = *std::max_element(logits.begin(), logits.end());
    double sum = 0.0;
    for (float l : logits) sum += std::exp(double(l) - double(max));
    return std::log(sum) + double(max) - double(logits[size_t(target)]);
}

int32_t argmax(std::span<const float> logits) {
    return int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

// A sequence with its own cache, under a policy, with the backend's attention statistics on
// while it lives when the policy scores tokens (h2o, scissorhands, snapkv). The statistics are
// drained after every step so they do not grow.
class EvalSequence {
  public:
    // budget_of: the length a budget in % is a share of. Every cache holds the model's whole
    // context, whatever the measurement needs: the full policy then fails only past the model's
    // context, and the backend's per-key attention scores (sized by the first cache they serve)
    // see one shape through the whole run.
    EvalSequence(Model& model, const KvEvalSetup& setup, int64_t budget_of)
        : model_(model),
          kv_(model.create_kv(int64_t(model.hparams().n_ctx_train), 1, setup.kv_type)),
          seq_(model, *kv_, 0) {
        const KvPolicyConfig cfg = setup.resolved(budget_of);
        budget_ = cfg.kind == KvPolicyKind::Full ? budget_of : cfg.budget;
        if (cfg.needs_scores()) {
            capture_.stats = true;
            model.backend().set_attention_capture(&capture_);
            capturing_ = true;
        }
        seq_.set_kv_policy(cfg);
    }
    ~EvalSequence() {
        if (capturing_) model_.backend().set_attention_capture(nullptr);
    }
    EvalSequence(const EvalSequence&) = delete;
    EvalSequence& operator=(const EvalSequence&) = delete;

    Sequence& seq() { return seq_; }
    const KvCache& kv() const { return *kv_; }
    int64_t budget() const { return budget_; }
    const KvEvictionTally& tally() const { return tally_; }

    std::span<const float> prefill(std::span<const int32_t> prompt) {
        const auto logits = seq_.prefill(prompt);
        after_step();
        return logits;
    }
    std::span<const float> decode(int32_t token) {
        const auto logits = seq_.decode(token);
        after_step();
        return logits;
    }

  private:
    void after_step() {
        capture_.sparsity.clear();
        capture_.rows.clear();
        for (const SequenceEviction& e : seq_.take_evictions()) {
            ++tally_.events;
            tally_.evicted_tokens += int64_t(e.evicted.size());
            tally_.max_cached = std::max(tally_.max_cached, e.length_before);
            tally_.ms += e.ms;
        }
        tally_.max_cached = std::max(tally_.max_cached, int64_t(seq_.cached_tokens().size()));
    }

    Model& model_;
    std::unique_ptr<KvCache> kv_;
    Sequence seq_;
    AttentionCapture capture_;
    bool capturing_ = false;
    int64_t budget_ = 0;
    KvEvictionTally tally_;
};

// The first run of decimal digits in s ("" when none).
std::string first_digits(std::string_view s) {
    const size_t b = s.find_first_of("0123456789");
    if (b == std::string_view::npos) return {};
    const size_t e = s.find_first_not_of("0123456789", b);
    return std::string(s.substr(b, e == std::string_view::npos ? s.size() - b : e - b));
}

std::vector<int32_t> encode(const Model& model, std::string_view text) {
    return model.tokenizer().encode(text, false, false);
}

void append(std::vector<int32_t>& out, const std::vector<int32_t>& part, int64_t times = 1) {
    for (int64_t i = 0; i < times; ++i) out.insert(out.end(), part.begin(), part.end());
}

// Index of the first occurrence of needle in hay, or -1.
int64_t find_run(std::span<const int32_t> hay, std::span<const int32_t> needle) {
    const auto it = std::search(hay.begin(), hay.end(), needle.begin(), needle.end());
    return it == hay.end() ? -1 : int64_t(it - hay.begin());
}

}  // namespace

// --- budgets ---

int64_t KvBudget::resolve(int64_t length) const {
    const int64_t n = tokens > 0 ? tokens : int64_t(std::llround(double(length) * percent / 100.0));
    return std::clamp<int64_t>(n, 1, std::max<int64_t>(1, length));
}

std::string KvBudget::label() const {
    if (tokens > 0) return std::to_string(tokens);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g%%", percent);
    return buf;
}

std::optional<KvBudget> parse_kv_budget(std::string_view text) {
    if (text.empty()) return std::nullopt;
    KvBudget b;
    if (text.back() == '%') {
        text.remove_suffix(1);
        const std::string s(text);
        char* end = nullptr;
        const double p = std::strtod(s.c_str(), &end);
        if (s.empty() || end != s.c_str() + s.size() || !(p > 0) || p > 100) return std::nullopt;
        b.percent = p;
        return b;
    }
    int64_t n = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec != std::errc() || ptr != text.data() + text.size() || n < 1) return std::nullopt;
    b.tokens = n;
    return b;
}

KvPolicyConfig KvEvalSetup::resolved(int64_t length) const {
    KvPolicyConfig c = policy;
    c.budget = c.kind == KvPolicyKind::Full ? 0 : budget.resolve(length);
    return c;
}

// --- perplexity ---

KvPplResult kv_eval_perplexity(Model& model, std::span<const int32_t> tokens,
                               const KvEvalSetup& setup, int64_t bucket,
                               const std::function<void(int64_t, int64_t)>& progress) {
    if (tokens.size() < 2)
        throw Error("perplexity needs at least 2 tokens, the text has " +
                    std::to_string(tokens.size()));
    if (bucket < 1) throw Error("the NLL bucket must be at least 1 token");
    const int64_t n = int64_t(tokens.size());
    EvalSequence es(model, setup, n);
    KvPplResult r;
    r.budget_tokens = es.budget();
    r.bucket = bucket;
    r.nll.reserve(size_t(n - 1));
    const auto t0 = Clock::now();
    std::span<const float> logits = es.prefill(tokens.first(1));
    double total = 0;
    for (int64_t i = 1; i < n; ++i) {
        const double v = nll(logits, tokens[size_t(i)]);
        total += v;
        r.nll.push_back(float(v));
        if (i + 1 < n) logits = es.decode(tokens[size_t(i)]);
        if (progress && (i % 256 == 0 || i + 1 == n)) progress(i, n - 1);
    }
    r.seconds = seconds_since(t0);
    r.scored_tokens = n - 1;
    r.mean_nll = total / double(r.scored_tokens);
    r.ppl = std::exp(r.mean_nll);
    r.tokens_per_s = double(n) / std::max(r.seconds, 1e-9);
    // nll[i] predicts tokens[i + 1]: bucket (i + 1) / bucket.
    const size_t n_buckets = size_t((n - 1) / bucket + 1);
    std::vector<double> sum(n_buckets, 0.0);
    std::vector<int64_t> count(n_buckets, 0);
    for (size_t i = 0; i < r.nll.size(); ++i) {
        const size_t b = (i + 1) / size_t(bucket);
        sum[b] += r.nll[i];
        ++count[b];
    }
    for (size_t b = 0; b < n_buckets; ++b)
        if (count[b] > 0) r.bucket_nll.push_back(sum[b] / double(count[b]));
    r.evictions = es.tally();
    return r;
}

// --- passkey ---

std::string_view passkey_format_name(PasskeyFormat f) {
    return f == PasskeyFormat::Chat ? "chat" : "plain";
}

PasskeyPrompt make_passkey_prompt(const Model& model, int64_t length, double depth, int key,
                                  PasskeyFormat format) {
    if (key < 10000 || key > 99999) throw Error("the pass key must have 5 digits");
    depth = std::clamp(depth, 0.0, 1.0);
    PasskeyPrompt p;
    p.key = std::to_string(key);
    const std::string intro =
        "There is an important info hidden inside a lot of irrelevant text. Find it and "
        "memorize it. I will quiz you about the important information there.";
    const std::string filler =
        " The grass is green. The sky is blue. The sun is yellow. Here we go. There and back "
        "again.";
    const std::string needle =
        " The pass key is " + p.key + ". Remember it. " + p.key + " is the pass key.";
    const std::string question = " What is the pass key?";
    const std::string answer = "The pass key is";
    const std::vector<int32_t> filler_ids = encode(model, filler);
    const std::vector<int32_t> needle_ids = encode(model, needle);

    // The whole prompt for a given number of filler repetitions (k before the needle).
    auto build = [&](int64_t before, int64_t after) {
        std::string content = intro;
        for (int64_t i = 0; i < before; ++i) content += filler;
        content += needle;
        for (int64_t i = 0; i < after; ++i) content += filler;
        content += question;
        std::vector<int32_t> ids;
        if (format == PasskeyFormat::Chat) {
            const std::vector<ChatMessage> msgs{{"user", content}};
            ids = tokenize_chat(model, msgs, true);
            append(ids, encode(model, answer));
        } else {
            if (model.tokenizer().vocab().add_bos()) ids.push_back(model.tokenizer().vocab().bos());
            append(ids, encode(model, content));
            append(ids, encode(model, " " + answer));
        }
        return ids;
    };
    const int64_t frame = int64_t(build(0, 0).size());
    if (frame >= length)
        throw Error("a passkey prompt of " + std::to_string(length) +
                    " tokens cannot hold the instruction, needle and question (" +
                    std::to_string(frame) + " tokens)");
    const int64_t reps = (length - frame) / int64_t(filler_ids.size());
    p.filler_before = int64_t(std::llround(depth * double(reps)));
    p.filler_after = reps - p.filler_before;
    p.tokens = build(p.filler_before, p.filler_after);
    p.needle_begin = find_run(p.tokens, needle_ids);
    if (p.needle_begin >= 0) p.needle_end = p.needle_begin + int64_t(needle_ids.size());
    return p;
}

PasskeyTrial kv_eval_passkey(Model& model, const PasskeyPrompt& prompt, const KvEvalSetup& setup,
                             int64_t max_new) {
    PasskeyTrial t;
    t.prompt_tokens = int64_t(prompt.tokens.size());
    t.key = prompt.key;
    const auto t0 = Clock::now();
    // The budget is a share of the prompt, not of prompt + answer.
    EvalSequence es(model, setup, t.prompt_tokens);
    t.budget_tokens = es.budget();
    std::span<const float> logits = es.prefill(prompt.tokens);
    if (prompt.needle_begin >= 0) {
        t.needle_tokens = prompt.needle_end - prompt.needle_begin;
        for (const int64_t pos : es.seq().slot_positions())
            if (pos >= prompt.needle_begin && pos < prompt.needle_end) ++t.needle_kept;
    }
    const auto& tk = model.tokenizer();
    std::vector<int32_t> out;
    for (int64_t i = 0; i < max_new; ++i) {
        const int32_t next = argmax(logits);
        if (tk.vocab().is_eog(next)) break;
        out.push_back(next);
        t.answer = tk.decode(out, false);
        const std::string digits = first_digits(t.answer);
        // Done once a run of digits has ended (or is already too long to be the key).
        if (!digits.empty() && (digits.size() >= t.key.size() ||
                                t.answer.find_last_of("0123456789") + 1 < t.answer.size()))
            break;
        if (i + 1 < max_new) logits = es.decode(next);
    }
    t.correct = first_digits(t.answer) == t.key;
    t.evictions = es.tally();
    t.seconds = seconds_since(t0);
    return t;
}

// --- speed ---

KvSpeedResult kv_eval_speed(Model& model, std::span<const int32_t> text, int64_t context,
                            const KvEvalSetup& setup, int64_t n_gen) {
    constexpr int64_t kWarmup = 4;
    const int64_t prompt = context - kWarmup - n_gen;
    if (n_gen < 1 || prompt < 1)
        throw Error("speed: a context of " + std::to_string(context) + " cannot hold " +
                    std::to_string(n_gen) + " timed and " + std::to_string(kWarmup) +
                    " warm-up steps after a prompt");
    if (int64_t(text.size()) < context)
        throw Error("speed: the text has " + std::to_string(text.size()) +
                    " tokens, fewer than the context of " + std::to_string(context));
    if (context > int64_t(model.hparams().n_ctx_train) && setup.policy.kind == KvPolicyKind::Full)
        throw Error("speed: a context of " + std::to_string(context) + " exceeds the model's " +
                    std::to_string(model.hparams().n_ctx_train) + " (full policy)");
    KvSpeedResult r;
    r.context = context;
    r.n_gen = n_gen;
    EvalSequence es(model, setup, context);
    r.budget_tokens = es.budget();
    const auto t0 = Clock::now();
    es.prefill(text.first(size_t(prompt)));
    r.prefill_seconds = seconds_since(t0);
    size_t next = size_t(prompt);
    for (int64_t i = 0; i < kWarmup; ++i) es.decode(text[next++]);
    const auto t1 = Clock::now();
    for (int64_t i = 0; i < n_gen; ++i) es.decode(text[next++]);
    r.tokens_per_s = double(n_gen) / std::max(seconds_since(t1), 1e-9);
    r.cached_tokens = int64_t(es.seq().cached_tokens().size());
    r.kv_bytes = es.kv().shape().bytes_per_token() * size_t(r.cached_tokens);
    r.evictions = es.tally();
    return r;
}

// --- the grid ---

std::string_view kv_eval_task_name(KvEvalTask t) {
    switch (t) {
        case KvEvalTask::Ppl:
            return "ppl";
        case KvEvalTask::Passkey:
            return "passkey";
        case KvEvalTask::Speed:
            return "speed";
    }
    return "?";
}

std::optional<KvEvalTask> parse_kv_eval_task(std::string_view name) {
    for (const KvEvalTask t : {KvEvalTask::Ppl, KvEvalTask::Passkey, KvEvalTask::Speed})
        if (name == kv_eval_task_name(t)) return t;
    return std::nullopt;
}

std::vector<KvEvalCell> kv_eval_cells(const KvEvalPlan& plan) {
    std::vector<KvEvalCell> cells;
    for (const KvTypes type : plan.kv_types) {
        if (std::find(plan.policies.begin(), plan.policies.end(), KvPolicyKind::Full) !=
            plan.policies.end()) {
            KvEvalCell c;
            c.policy = KvPolicyKind::Full;
            c.kv_type = type;
            cells.push_back(c);
        }
        for (const KvPolicyKind kind : plan.policies) {
            if (kind == KvPolicyKind::Full) continue;
            for (const KvBudget& b : plan.budgets) {
                KvEvalCell c;
                c.policy = kind;
                c.budget = b;
                c.kv_type = type;
                cells.push_back(c);
            }
        }
    }
    return cells;
}

namespace {

std::string cell_label(const KvEvalCell& c) {
    return std::string(kv_policy_name(c.policy)) + " " + c.budget.label() + " " +
           kv_types_name(c.kv_type);
}

// Runs f, recording an Error in the cell instead of stopping the grid.
template <typename F>
void guarded(KvEvalCell& cell, std::string_view task, F&& f) {
    try {
        f();
    } catch (const Error& e) {
        cell.errors.push_back(std::string(task) + ": " + e.what());
    }
}

}  // namespace

std::vector<KvEvalCell> run_kv_eval(Model& model, std::span<const int32_t> text,
                                    const KvEvalPlan& plan,
                                    const std::function<void(const std::string&)>& progress) {
    auto say = [&](const std::string& s) {
        if (progress) progress(s);
    };
    auto has = [&](KvEvalTask t) {
        return std::find(plan.tasks.begin(), plan.tasks.end(), t) != plan.tasks.end();
    };
    std::span<const int32_t> ppl_text = text;
    if (plan.ppl_tokens > 0 && int64_t(text.size()) > plan.ppl_tokens)
        ppl_text = text.first(size_t(plan.ppl_tokens));

    // The same keys for every cell, so cells differ only in their policy.
    std::mt19937_64 rng(plan.seed);
    std::vector<int> keys;
    for (size_t i = 0; i < plan.passkey_lengths.size() * plan.passkey_depths.size(); ++i)
        keys.push_back(int(10000 + rng() % 90000));

    std::vector<KvEvalCell> cells = kv_eval_cells(plan);
    for (KvEvalCell& cell : cells) {
        KvEvalSetup setup;
        setup.policy = plan.base;
        setup.policy.kind = cell.policy;
        setup.budget = cell.budget;
        setup.kv_type = cell.kv_type;
        const std::string label = cell_label(cell);
        if (has(KvEvalTask::Ppl))
            guarded(cell, "ppl", [&] {
                say(label + ": perplexity over " + std::to_string(ppl_text.size()) + " tokens");
                cell.ppl = kv_eval_perplexity(
                    model, ppl_text, setup, plan.ppl_bucket, [&](int64_t done, int64_t total) {
                        if (done % 2048 == 0)
                            say(label + ": " + std::to_string(done) + "/" + std::to_string(total));
                    });
            });
        if (has(KvEvalTask::Passkey)) {
            size_t k = 0;
            for (const int64_t len : plan.passkey_lengths)
                for (const double depth : plan.passkey_depths) {
                    const int key = keys[k++];
                    guarded(cell, "passkey", [&] {
                        say(label + ": passkey " + std::to_string(len) + " tokens, depth " +
                            std::to_string(int(std::lround(depth * 100))) + "%");
                        const PasskeyPrompt p =
                            make_passkey_prompt(model, len, depth, key, plan.passkey_format);
                        PasskeyTrial t = kv_eval_passkey(model, p, setup);
                        t.length = len;
                        t.depth = depth;
                        cell.passkey.push_back(std::move(t));
                    });
                }
        }
        if (has(KvEvalTask::Speed))
            for (const int64_t ctx : plan.speed_contexts)
                guarded(cell, "speed", [&] {
                    say(label + ": decode speed at " + std::to_string(ctx) + " tokens");
                    cell.speed.push_back(kv_eval_speed(model, text, ctx, setup, plan.speed_gen));
                });
    }
    return cells;
}

}  // namespace fluoro
