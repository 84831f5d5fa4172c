// Speculative generation end to end: at temperature 0 the output equals plain decoding token for
// token (for every drafter, small seeded models and the real default models); above 0 the first
// two tokens follow the target's distribution (χ² over 10k samples on a small model restricted
// to 6 candidates by top-k); after many rollbacks the cache gives the logits a fresh prefill
// gives.
#include "speculative/spec_generate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <random>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "decode/chat_tokenize.h"
#include "gguf/test_model.h"
#include "model/model.h"
#include "speculative/draft_model_drafter.h"
#include "speculative/prompt_lookup.h"
#include "test_models.h"
#include "test_temp.h"

namespace fluoro::spec {
namespace {

using gguf::TestModelSpec;

std::filesystem::path small_model(uint64_t seed, const std::string& name) {
    TestModelSpec spec;
    spec.seed = seed;
    spec.n_layer = 2;
    const auto path = test::unique_temp_path(name + ".gguf");
    gguf::write_test_model(path, spec);
    return path;
}

SamplingParams greedy_params() {
    SamplingParams sp;
    sp.temperature = 0.0f;
    return sp;
}

// Prompts with repeats (so prompt lookup has something to find) and without.
std::vector<std::vector<int32_t>> test_prompts(int32_t n_vocab, int count) {
    std::mt19937 g(7);
    std::vector<std::vector<int32_t>> out;
    for (int i = 0; i < count; ++i) {
        std::vector<int32_t> p;
        const int len = 6 + int(g() % 20);
        for (int j = 0; j < len; ++j) p.push_back(int32_t(10 + g() % uint32_t(n_vocab - 10)));
        if (i % 2 == 0) {  // copy a span of itself to the end
            const size_t from = g() % (p.size() / 2);
            p.insert(p.end(), p.begin() + ptrdiff_t(from), p.begin() + ptrdiff_t(from + 4));
        }
        out.push_back(p);
    }
    return out;
}

struct Target {
    cpu::CpuBackend be{2};
    std::unique_ptr<Model> model;
    std::unique_ptr<KvCache> kv;
    explicit Target(const std::filesystem::path& path, int64_t ctx = 256) {
        model = Model::load(path, be);
        kv = model->create_kv(ctx, 1, KvType::F16);
    }
};

std::vector<int32_t> plain_tokens(Target& t, std::span<const int32_t> prompt, int64_t n,
                                  const SamplingParams& sp) {
    Sequence seq(*t.model, *t.kv, 0);
    Sampler sampler(sp, int32_t(t.model->n_vocab()));
    GenerateOptions o;
    o.max_tokens = n;
    return generate(seq, t.model->tokenizer(), prompt, sampler, o).tokens;
}

GenerateResult spec_result(Target& t, Drafter& d, std::span<const int32_t> prompt, int64_t n,
                           const SamplingParams& sp, SpecOptions so = {}) {
    Sequence seq(*t.model, *t.kv, 0);
    Sampler sampler(sp, int32_t(t.model->n_vocab()));
    GenerateOptions o;
    o.max_tokens = n;
    return generate_speculative(seq, t.model->tokenizer(), prompt, sampler, d, o, so);
}

TEST(SpecGenerate, GreedyPromptLookupEqualsPlainDecoding) {
    Target t(small_model(42, "spec_target"));
    PromptLookupDrafter d;
    int64_t drafted = 0;
    for (const auto& prompt : test_prompts(int32_t(t.model->n_vocab()), 12)) {
        const auto want = plain_tokens(t, prompt, 40, greedy_params());
        const GenerateResult got = spec_result(t, d, prompt, 40, greedy_params());
        EXPECT_EQ(got.tokens, want);
        drafted += got.drafted_tokens;
    }
    EXPECT_GT(drafted, 0) << "prompt lookup never drafted: the test would be vacuous";
}

TEST(SpecGenerate, GreedyDraftModelEqualsPlainDecoding) {
    Target t(small_model(42, "spec_target2"));
    Target draft(small_model(43, "spec_draft"));  // same vocabulary, other weights
    check_vocab_compatible(*t.model, *draft.model);
    DraftModelDrafter d(*draft.model, *draft.kv, 0);
    int64_t accepted = 0, drafted = 0;
    for (const auto& prompt : test_prompts(int32_t(t.model->n_vocab()), 8)) {
        const auto want = plain_tokens(t, prompt, 30, greedy_params());
        SpecOptions so;
        so.max_draft = 4;
        const GenerateResult got = spec_result(t, d, prompt, 30, greedy_params(), so);
        EXPECT_EQ(got.tokens, want);
        accepted += got.accepted_tokens;
        drafted += got.drafted_tokens;
    }
    EXPECT_GT(drafted, 0);
    EXPECT_LT(accepted, drafted) << "a different draft model should be rejected sometimes";
}

TEST(SpecGenerate, TheTargetAsItsOwnDraftIsAlwaysAccepted) {
    const auto path = small_model(42, "spec_self");
    Target t(path), draft(path);
    DraftModelDrafter d(*draft.model, *draft.kv, 0);
    const std::vector<int32_t> prompt{5, 17, 42, 99, 3, 7, 250, 11};
    const GenerateResult got = spec_result(t, d, prompt, 40, greedy_params());
    EXPECT_EQ(got.tokens, plain_tokens(t, prompt, 40, greedy_params()));
    EXPECT_EQ(got.accepted_tokens, got.drafted_tokens);
    EXPECT_LT(got.target_steps, 40 / 3) << "tau should be well above 1";
}

TEST(SpecGenerate, GreedySelfSpeculativeEqualsPlainDecoding) {
    TestModelSpec spec;
    spec.n_layer = 4;
    const auto path = test::unique_temp_path("spec_selfspec.gguf");
    gguf::write_test_model(path, spec);
    Target t(path);
    auto draft_kv = t.model->create_kv(256, 1, KvType::F16);
    DraftModelDrafter d(*t.model, *draft_kv, 0, 0, 2);
    EXPECT_EQ(d.name(), "self_speculative@2");
    int64_t drafted = 0;
    for (const auto& prompt : test_prompts(int32_t(t.model->n_vocab()), 6)) {
        const auto want = plain_tokens(t, prompt, 24, greedy_params());
        const GenerateResult got = spec_result(t, d, prompt, 24, greedy_params());
        EXPECT_EQ(got.tokens, want);
        drafted += got.drafted_tokens;
    }
    EXPECT_GT(drafted, 0);
    EXPECT_THROW(DraftModelDrafter(*t.model, *draft_kv, 0, 0, 4), Error);  // not an early exit
}

TEST(SpecGenerate, CallbacksReportEveryStepInOrder) {
    Target t(small_model(42, "spec_callbacks"));
    Target draft(small_model(43, "spec_callbacks_draft"));
    DraftModelDrafter d(*draft.model, *draft.kv, 0);
    const std::vector<int32_t> prompt{5, 17, 42, 99, 3, 7, 250, 11};
    Sequence seq(*t.model, *t.kv, 0);
    Sampler sampler(greedy_params(), int32_t(t.model->n_vocab()));
    GenerateOptions o;
    o.max_tokens = 20;
    std::string order;
    int64_t drafted = 0, accepted = 0, streamed = 0;
    SpecCallbacks cb;
    cb.on_prefilled = [&] { order += 'P'; };
    cb.on_drafted = [&](int32_t n) {
        order += 'D';
        drafted += n;
    };
    cb.on_step = [&](const SpecStepInfo& i) {
        order += 'V';
        accepted += i.accepted;
        EXPECT_EQ(i.q.size(), i.drafted.size());
        EXPECT_EQ(i.p.size(), i.drafted.size());
        EXPECT_LE(i.accepted, int32_t(i.drafted.size()));
        EXPECT_EQ(i.kind == NextKind::Bonus, i.accepted == int32_t(i.drafted.size()));
        for (int32_t j = 0; j < i.accepted; ++j) EXPECT_EQ(i.p[size_t(j)], 1.0f);  // greedy
    };
    cb.on_token = [&](const GeneratedToken& g) { streamed += g.id >= 0 ? 1 : 0; };
    const GenerateResult r =
        generate_speculative(seq, t.model->tokenizer(), prompt, sampler, d, o, SpecOptions{}, cb);
    ASSERT_GE(order.size(), 3u);
    EXPECT_EQ(order[0], 'P');
    for (size_t i = 1; i < order.size(); ++i) EXPECT_EQ(order[i], i % 2 ? 'D' : 'V') << order;
    EXPECT_EQ(int64_t(order.size() - 1) / 2, r.target_steps);
    EXPECT_EQ(drafted, r.drafted_tokens);
    EXPECT_EQ(accepted, r.accepted_tokens);
    EXPECT_EQ(streamed, int64_t(r.tokens.size()));
}

// Proposes, per call, the target's own greedy continuation cut after `right[call]` tokens and then
// one wrong token (right[call] < 0: the whole continuation), and records each call's max_n.
class ScriptedDrafter final : public Drafter {
  public:
    ScriptedDrafter(std::vector<int32_t> prompt, std::vector<int32_t> output,
                    std::vector<int> right, int32_t n_vocab)
        : prompt_(std::move(prompt)),
          output_(std::move(output)),
          right_(std::move(right)),
          n_vocab_(n_vocab) {}
    std::string_view name() const override { return "scripted"; }
    void propose(std::span<const int32_t> context, int32_t max_n, const SamplingParams&,
                 Draft& out) override {
        out.clear();
        asked.push_back(max_n);
        const size_t call = asked.size() - 1;
        const size_t at = context.size() - prompt_.size();  // output tokens emitted so far
        const int right = call < right_.size() ? right_[call] : -1;
        for (int32_t i = 0; i < max_n && at + size_t(i) < output_.size(); ++i) {
            int32_t id = output_[at + size_t(i)];
            if (right >= 0 && i == right) id = (id + 1) % n_vocab_;  // the target never picks it
            out.ids.push_back(id);
            out.q.push_back(TokenDist::point(id));
            if (right >= 0 && i == right) break;
        }
    }
    std::vector<int32_t> asked;

  private:
    std::vector<int32_t> prompt_, output_;
    std::vector<int> right_;
    int32_t n_vocab_;
};

TEST(SpecGenerate, AdaptiveDraftLengthJumpsBackToTheMaximumAfterAFullAcceptance) {
    Target t(small_model(42, "spec_adaptive"));
    const std::vector<int32_t> prompt{5, 17, 42, 99, 3, 7, 250, 11};
    const std::vector<int32_t> plain = plain_tokens(t, prompt, 40, greedy_params());
    ASSERT_EQ(plain.size(), 40u);
    // Calls: all right (6), then 2 right of 6, then 0 of 3, all right (1), all right (6), 4 of 6.
    ScriptedDrafter d(prompt, plain, {-1, 2, 0, -1, -1, 4}, int32_t(t.model->n_vocab()));
    SpecOptions so;
    so.max_draft = 6;
    const GenerateResult r = spec_result(t, d, prompt, 40, greedy_params(), so);
    EXPECT_EQ(r.tokens, plain);  // wrong drafts never change the output
    ASSERT_GE(d.asked.size(), 7u);
    const std::vector<int32_t> want{6, 6, 3, 1, 6, 6, 5};
    EXPECT_EQ(std::vector<int32_t>(d.asked.begin(), d.asked.begin() + 7), want);
}

TEST(SpecGenerate, CacheAfterRollbacksGivesFreshPrefillLogits) {
    Target t(small_model(42, "spec_rollback"));
    Target draft(small_model(44, "spec_rollback_draft"));
    DraftModelDrafter d(*draft.model, *draft.kv, 0);
    const std::vector<int32_t> prompt{5, 17, 42, 99, 3, 7, 250, 11};
    Sequence seq(*t.model, *t.kv, 0);
    Sampler sampler(greedy_params(), int32_t(t.model->n_vocab()));
    GenerateOptions o;
    o.max_tokens = 30;
    const GenerateResult r =
        generate_speculative(seq, t.model->tokenizer(), prompt, sampler, d, o, SpecOptions{});
    ASSERT_GT(r.drafted_tokens, r.accepted_tokens) << "no rollback happened";
    const std::vector<int32_t> held = seq.tokens();
    ASSERT_EQ(held.size(), prompt.size() + r.tokens.size() - 1);  // the last token is not fed
    const std::vector<float> after = [&] {
        auto l = seq.decode(r.tokens.back());
        return std::vector<float>(l.begin(), l.end());
    }();
    Target fresh(small_model(42, "spec_rollback_fresh"));
    Sequence f(*fresh.model, *fresh.kv, 0);
    std::vector<int32_t> all = held;
    all.push_back(r.tokens.back());
    const auto want = f.prefill(all);
    float diff = 0;
    for (size_t i = 0; i < want.size(); ++i) diff = std::max(diff, std::abs(want[i] - after[i]));
    EXPECT_LE(diff, 1e-4f);
}

SamplingParams chi_params() {
    SamplingParams sp;
    sp.temperature = 1.5f;  // flat enough that every one of the 6 kept tokens is drawn often
    sp.top_k = 6;
    sp.top_p = 1.0f;
    sp.min_p = 0.0f;
    return sp;
}

// χ² over the first two tokens of speculative sampling with drafter d against target t's exact
// distributions: the first token, then the second given each first.
void expect_sampled_output_follows_target(Target& t, DraftModelDrafter& d,
                                          std::span<const int32_t> prompt, int64_t& accepted,
                                          int64_t& drafted) {
    const SamplingParams sp = chi_params();
    Sequence ref(*t.model, *t.kv, 0);
    Sampler probe(sp, int32_t(t.model->n_vocab()));
    TokenDist p1;
    probe.distribution(ref.prefill(prompt), ref.tokens(), p1);
    ASSERT_EQ(p1.ids.size(), 6u);
    std::map<std::pair<int32_t, int32_t>, double> joint;
    for (size_t i = 0; i < p1.ids.size(); ++i) {
        std::vector<int32_t> with(prompt.begin(), prompt.end());
        with.push_back(p1.ids[i]);
        TokenDist p2;
        probe.distribution(ref.prefill(with), ref.tokens(), p2);
        for (size_t j = 0; j < p2.ids.size(); ++j)
            joint[{p1.ids[i], p2.ids[j]}] = p1.probs[i] * p2.probs[j];
    }

    constexpr int kSamples = 10000;
    std::map<int32_t, int64_t> first;
    std::map<std::pair<int32_t, int32_t>, int64_t> pairs;
    Sequence seq(*t.model, *t.kv, 0);
    Sampler sampler(sp, int32_t(t.model->n_vocab()));
    GenerateOptions o;
    o.max_tokens = 3;  // the first step drafts (up to) 2 tokens: both tested tokens speculated
    SpecOptions so;
    so.max_draft = 2;
    so.adaptive = false;
    accepted = drafted = 0;
    for (int s = 0; s < kSamples; ++s) {
        sampler.reset(uint64_t(s) * 7919 + 1);
        const GenerateResult r =
            generate_speculative(seq, t.model->tokenizer(), prompt, sampler, d, o, so);
        ASSERT_GE(r.tokens.size(), 2u);
        ++first[r.tokens[0]];
        ++pairs[{r.tokens[0], r.tokens[1]}];
        accepted += r.accepted_tokens;
        drafted += r.drafted_tokens;
    }
    double chi_first = 0, chi_joint = 0;
    for (size_t i = 0; i < p1.ids.size(); ++i) {
        const double e = p1.probs[i] * kSamples, o1 = double(first[p1.ids[i]]);
        chi_first += (o1 - e) * (o1 - e) / e;
    }
    int64_t seen = 0;
    for (const auto& [cell, prob] : joint) {
        const double e = prob * kSamples, o2 = double(pairs[cell]);
        chi_joint += (o2 - e) * (o2 - e) / e;
        seen += pairs[cell];
    }
    EXPECT_EQ(seen, kSamples) << "a pair outside the target's support was emitted";
    // 99.9% quantiles: 5 degrees of freedom 20.52; 35 degrees of freedom 66.62.
    EXPECT_LT(chi_first, 20.52);
    EXPECT_LT(chi_joint, 66.62);
}

// The draft's plain-softmax probabilities (temperature 1, float64) after `context`, computed on
// `probe`: a Target of the draft's file whose cache no drafter uses.
std::vector<double> plain_softmax(Target& probe, std::span<const int32_t> context) {
    Sequence seq(*probe.model, *probe.kv, 0);
    const auto logits = seq.prefill(context);
    const double max = *std::max_element(logits.begin(), logits.end());
    std::vector<double> p(logits.size());
    double sum = 0;
    for (size_t i = 0; i < p.size(); ++i) sum += p[i] = std::exp(double(logits[i]) - max);
    for (double& x : p) x /= sum;
    return p;
}

// With a sampling target and a different sampling draft model.
TEST(SpecGenerate, SampledOutputFollowsTheTargetDistribution) {
    Target t(small_model(42, "spec_chi_t"), 64);
    Target draft(small_model(45, "spec_chi_d"), 64);
    DraftModelDrafter d(*draft.model, *draft.kv, 0, 1234);
    const std::vector<int32_t> prompt{5, 17, 42, 99};
    int64_t accepted = 0, drafted = 0;
    expect_sampled_output_follows_target(t, d, prompt, accepted, drafted);
    EXPECT_GT(accepted, 0);
    EXPECT_LT(accepted, drafted);
}

// The same with the draft stopping at tokens it is unsure of (set_min_confidence): draft lengths
// then depend on what was drafted, and the output must still be the target's.
TEST(SpecGenerate, SampledOutputFollowsTheTargetWithAConfidenceStop) {
    Target t(small_model(42, "spec_chi_ct"), 64);
    const auto d_path = small_model(45, "spec_chi_cd");
    Target draft(d_path, 64), probe(d_path, 64);
    // The stop looks at the draft's confidence at a position (its top token's probability), so
    // the first position always drafts or never does; the second depends on the first token
    // drawn. A threshold between two of the second position's confidences after each of the
    // draft's 6 likeliest first tokens (below the first position's) cuts some second drafts:
    // a 4-token prompt where one lies near the middle.
    const auto threshold = [&](std::span<const int32_t> prompt, float& p_min) {
        std::vector<double> first = plain_softmax(probe, prompt);
        std::vector<int32_t> order(first.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = int32_t(i);
        std::partial_sort(order.begin(), order.begin() + 6, order.end(), [&](int32_t a, int32_t b) {
            return first[size_t(a)] > first[size_t(b)];
        });
        std::vector<double> second;
        for (int i = 0; i < 6; ++i) {
            std::vector<int32_t> with(prompt.begin(), prompt.end());
            with.push_back(order[size_t(i)]);
            const std::vector<double> p2 = plain_softmax(probe, with);
            second.push_back(*std::max_element(p2.begin(), p2.end()));
        }
        std::sort(second.begin(), second.end(), std::greater<>());
        const double first_top = *std::max_element(first.begin(), first.end());
        int best = 0;  // how many of the 6 lie on the smaller side
        for (int k = 0; k + 1 < 6; ++k) {
            const double mid = (second[size_t(k)] + second[size_t(k + 1)]) / 2;
            const int balance = std::min(k + 1, 5 - k);
            if (second[size_t(k)] > second[size_t(k + 1)] && mid < first_top && balance > best) {
                best = balance;
                p_min = float(mid);
            }
        }
        return best;
    };
    std::vector<int32_t> prompt;
    float p_min = 0;
    for (const auto& candidate : test_prompts(int32_t(t.model->n_vocab()), 16)) {
        const auto four = std::span(candidate).first(4);
        if (threshold(four, p_min) >= 2) {
            prompt.assign(four.begin(), four.end());
            break;
        }
    }
    ASSERT_FALSE(prompt.empty()) << "no prompt lets the first position draft and cuts the second";
    {
        // The stop at work: every draft keeps its first token, some lose their second.
        DraftModelDrafter counter(*draft.model, *draft.kv, 0, 99);
        counter.set_min_confidence(p_min);
        int64_t lengths[3] = {};
        Draft dr;
        for (int i = 0; i < 400; ++i) {
            counter.propose(prompt, 2, chi_params(), dr);
            ++lengths[dr.ids.size()];
        }
        EXPECT_EQ(lengths[0], 0);
        EXPECT_GT(lengths[1], 20) << "the stop should cut some second drafts";
        EXPECT_GT(lengths[2], 20) << "the stop should leave some second drafts";
    }
    DraftModelDrafter d(*draft.model, *draft.kv, 0, 1234);
    d.set_min_confidence(p_min);
    int64_t accepted = 0, drafted = 0;
    expect_sampled_output_follows_target(t, d, prompt, accepted, drafted);
    EXPECT_GT(accepted, 0);
}

// Greedy: the draft stops exactly before its first token under p_min (checked against a float64
// softmax of the draft's own logits), and the output stays plain decoding's.
TEST(SpecGenerate, ConfidenceStopCutsTheDraftWhereTheDraftIsUnsure) {
    Target t(small_model(42, "spec_conf_t"));
    const auto d_path = small_model(43, "spec_conf_d");
    Target draft(d_path), probe(d_path);  // probe: a cache of its own for plain_softmax
    const SamplingParams sp = greedy_params();
    // A prompt whose greedy draft has a token less sure than every one before it (the first
    // excepted): the cut goes there. Each drafted token is the argmax, so its plain-softmax
    // probability is the draft's confidence at its position.
    std::vector<int32_t> prompt;
    Draft full;
    std::vector<double> conf;
    size_t cut = 0;
    for (const auto& candidate : test_prompts(int32_t(t.model->n_vocab()), 12)) {
        DraftModelDrafter free_draft(*draft.model, *draft.kv, 0);
        free_draft.propose(candidate, 8, sp, full);
        ASSERT_EQ(full.ids.size(), 8u);
        conf.clear();
        std::vector<int32_t> context = candidate;
        for (const int32_t x : full.ids) {
            conf.push_back(plain_softmax(probe, context)[size_t(x)]);
            context.push_back(x);
        }
        for (size_t i = 1; i < conf.size() && !cut; ++i)
            if (conf[i] < *std::min_element(conf.begin(), conf.begin() + ptrdiff_t(i))) cut = i;
        if (cut) {
            prompt = candidate;
            break;
        }
    }
    ASSERT_GT(cut, 0u) << "no prompt's draft has a token less sure than those before it";
    const double below = *std::min_element(conf.begin(), conf.begin() + ptrdiff_t(cut));
    DraftModelDrafter sure(*draft.model, *draft.kv, 0);
    sure.set_min_confidence(float((conf[cut] + below) / 2));
    Draft got;
    sure.propose(prompt, 8, sp, got);
    EXPECT_EQ(got.ids, std::vector<int32_t>(full.ids.begin(), full.ids.begin() + ptrdiff_t(cut)));
    EXPECT_EQ(got.q.size(), got.ids.size());

    sure.set_min_confidence(0.999f);  // nothing is that sure: no draft, plain steps
    sure.propose(prompt, 8, sp, got);
    EXPECT_TRUE(got.ids.empty());
    for (const auto& p : test_prompts(int32_t(t.model->n_vocab()), 4))
        EXPECT_EQ(spec_result(t, sure, p, 20, sp).tokens, plain_tokens(t, p, 20, sp));
    EXPECT_THROW(sure.set_min_confidence(1.0f), Error);
    EXPECT_THROW(sure.set_min_confidence(-0.1f), Error);
}

TEST(SpecGenerate, VocabularyMismatchIsRefusedByName) {
    Target a(small_model(42, "spec_vocab_a"));
    TestModelSpec spec;
    spec.n_vocab = 512 + 400;
    const auto path = test::unique_temp_path("spec_vocab_b.gguf");
    gguf::write_test_model(path, spec);
    Target b(path);
    try {
        check_vocab_compatible(*a.model, *b.model);
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("spec_vocab_b"), std::string::npos) << e.what();
    }
}

// --- the real default models ------------------------------------------------------------------

std::vector<int32_t> chat_prompt(const Model& m, const std::string& user) {
    const std::vector<ChatMessage> messages{{"user", user}};
    return tokenize_chat(m, messages, true);
}

void expect_greedy_equal_on_real_model(const std::filesystem::path& path, int64_t n_tokens) {
    cpu::CpuBackend be(2);
    auto model = Model::load(path, be);
    auto kv = model->create_kv(1024, 1, KvType::F16);
    const std::vector<std::string> prompts{
        "Repeat this sentence exactly: The quick brown fox jumps over the lazy dog near the "
        "riverbank every morning.",
        "Rewrite this code with better names:\nint f(int a, int b) { int c = a + b; return c * "
        "c; }",
        "What is the capital of France?",
        "List the days of the week.",
    };
    int64_t accepted = 0;
    for (const std::string& text : prompts) {
        const auto prompt = chat_prompt(*model, text);
        Sequence seq(*model, *kv, 0);
        Sampler s1(greedy_params(), int32_t(model->n_vocab()));
        GenerateOptions o;
        o.max_tokens = n_tokens;
        const auto want = generate(seq, model->tokenizer(), prompt, s1, o).tokens;
        seq.reset();
        Sampler s2(greedy_params(), int32_t(model->n_vocab()));
        PromptLookupDrafter d;
        const GenerateResult got =
            generate_speculative(seq, model->tokenizer(), prompt, s2, d, o, SpecOptions{});
        EXPECT_EQ(got.tokens, want) << text;
        accepted += got.accepted_tokens;
        // Self-speculative with half the layers.
        seq.reset();
        Sampler s3(greedy_params(), int32_t(model->n_vocab()));
        auto draft_kv = model->create_kv(1024, 1, KvType::F16);
        DraftModelDrafter self(*model, *draft_kv, 0, 0, int64_t(model->hparams().n_layer / 2));
        SpecOptions so;
        so.max_draft = 4;
        const GenerateResult got_self =
            generate_speculative(seq, model->tokenizer(), prompt, s3, self, o, so);
        EXPECT_EQ(got_self.tokens, want) << "self-speculative: " << text;
    }
    EXPECT_GT(accepted, 0) << "prompt lookup accepted nothing on copy-heavy prompts";
}

TEST(SpecGenerateRealModel, SmolLM2GreedyPromptLookupEqualsPlain) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    expect_greedy_equal_on_real_model(path, 48);
}

TEST(SpecGenerateRealModel, Gemma3GreedyPromptLookupEqualsPlain) {
    FLUORO_REQUIRE_MODEL(path, test::kGemma3File);
    expect_greedy_equal_on_real_model(path, 32);
}

}  // namespace
}  // namespace fluoro::spec
