// Continuous batching (decode/batch_decoder.h): every job generates exactly what it generates
// alone — the same tokens and, bit for bit, the same log-probabilities (each is computed from the
// full row of logits, so equal log-probabilities at every step mean the batched rows equal the
// solo rows to the last bit for the sampled token and the top alternatives). Exact equality is
// the tolerance because the kernels are batch-invariant (each output row is computed from its
// own input row in the same order whatever the batch holds, as SequenceExtend checks for one
// sequence); a kernel that mixed rows would break it. Jobs start at different steps, prompts are
// chunked across steps beside other jobs' decodes, and one job is cancelled midway.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "core/run_errors.h"
#include "decode/batch_decoder.h"
#include "decode/generate.h"
#include "decode/sequence.h"
#include "kv/paged_kv.h"
#include "kv/prefix_cache.h"
#include "model/model.h"
#include "sampling/sampler.h"
#include "test_models.h"

namespace fluoro {
namespace {

struct Trace {
    std::vector<int32_t> tokens;
    std::vector<float> logprobs;  // the sampled token's, then its top alternatives', per token
    std::string text;
    StopReason stop = StopReason::MaxTokens;
};

void record(Trace& t, const GeneratedToken& g) {
    if (g.id < 0 || g.sample == nullptr) return;
    t.tokens.push_back(g.id);
    t.logprobs.push_back(g.sample->logprob);
    for (const TokenProb& p : g.sample->top()) t.logprobs.push_back(p.logprob);
}

constexpr int64_t kCtx = 512;

KvShape batch_shape(int64_t slots, int64_t cache_slots, int64_t ctx = kCtx) {
    KvShape ks;
    ks.n_ctx = ctx;
    ks.n_seq = slots + cache_slots;
    ks.pool_tokens = (slots + 1) * (ctx + 64);
    return ks;
}

// What the job generates alone, through generate() on a cache of its own.
Trace solo(Model& model, const std::vector<int32_t>& prompt, const SamplingParams& sp,
           int64_t max_tokens, int64_t ctx = kCtx) {
    auto kv = model.create_kv(batch_shape(1, 0, ctx));
    Sequence seq(model, *kv, 0);
    Sampler sampler(sp, int32_t(model.n_vocab()));
    GenerateOptions opt;
    opt.max_tokens = max_tokens;
    Trace t;
    const GenerateResult r = generate(seq, model.tokenizer(), prompt, sampler, opt,
                                      [&](const GeneratedToken& g) { record(t, g); });
    t.text = r.text;
    t.stop = r.stop;
    return t;
}

SamplingParams greedy() {
    SamplingParams sp;
    sp.temperature = 0;
    sp.n_probs = 5;
    return sp;
}

std::unique_ptr<Model> load_smollm2(const std::filesystem::path& path, cpu::CpuBackend& be) {
    ModelLoadOptions lo;
    lo.max_batch = 64;
    lo.max_logit_rows = 8;
    return Model::load(path, be, lo);
}

std::vector<std::vector<int32_t>> prompts(Model& model) {
    const char* texts[] = {
        "The capital of France is",
        "Write a short poem about the sea. The waves",
        "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
        "In 1969, the first humans landed on the Moon. The mission was called Apollo 11 and it "
        "was commanded by Neil Armstrong, with Buzz Aldrin as lunar module pilot and Michael "
        "Collins in orbit. After the landing, Armstrong said",
    };
    std::vector<std::vector<int32_t>> out;
    for (const char* t : texts) out.push_back(model.tokenizer().encode(t, true, false));
    return out;
}

void expect_same(const Trace& batched, const Trace& alone, size_t job) {
    EXPECT_EQ(batched.tokens, alone.tokens) << "job " << job;
    EXPECT_EQ(batched.text, alone.text) << "job " << job;
    ASSERT_EQ(batched.logprobs.size(), alone.logprobs.size()) << "job " << job;
    EXPECT_EQ(std::memcmp(batched.logprobs.data(), alone.logprobs.data(),
                          alone.logprobs.size() * sizeof(float)),
              0)
        << "job " << job << ": a log-probability differs from its solo run";
}

// What the batches held, for the tests to check they exercised what they mean to.
struct Seen {
    bool mixed = false;  // some step held one job's prompt chunk and another's decode
    // The most keys a decoding job had cached in a step where two or more jobs decoded.
    int64_t batched_decode_kv = 0;
};

// Job i joins at step 3i (they meet at different points of their runs) with sampling sp[i];
// each must generate what it generates alone.
Seen expect_batched_equal_solo(Model& model, const std::vector<std::vector<int32_t>>& ps,
                               const std::vector<SamplingParams>& sp, int64_t max_tokens,
                               int64_t prefill_chunk, int64_t ctx = kCtx) {
    std::vector<Trace> alone;
    for (size_t i = 0; i < ps.size(); ++i)
        alone.push_back(solo(model, ps[i], sp[i], max_tokens, ctx));

    auto kv = model.create_kv(batch_shape(int64_t(ps.size()), 0, ctx));
    BatchDecoder::Options o;
    o.n_slots = int64_t(ps.size());
    o.prefill_chunk = prefill_chunk;
    BatchDecoder dec(model, *kv, nullptr, o);
    std::vector<Trace> got(ps.size());
    const auto job = [&](size_t i) {
        BatchJob j;
        j.prompt = ps[i];
        j.sampling = sp[i];
        j.options.max_tokens = max_tokens;
        j.on_token = [&got, i](const GeneratedToken& g) { record(got[i], g); };
        j.tag = i;
        return j;
    };
    size_t next = 0, ended = 0;
    Seen seen;
    for (int64_t step = 0; ended < ps.size(); ++step) {
        if (next < ps.size() && step % 3 == 0) dec.start(job(next++));
        BatchStep info;
        for (BatchEnded& e : dec.step(&info)) {
            EXPECT_TRUE(e.error.empty()) << e.error;
            got[e.tag].stop = e.result.stop;
            got[e.tag].text = e.result.text;
            ++ended;
        }
        bool prefill = false;
        int64_t decodes = 0, decode_kv = 0;
        for (const BatchStepPart& p : info.parts) {
            if (p.prefill) {
                prefill = true;
                EXPECT_LE(p.tokens, o.prefill_chunk);
            } else {
                ++decodes;
                decode_kv = std::max(decode_kv, p.kv_tokens);
            }
        }
        seen.mixed = seen.mixed || (prefill && decodes > 0);
        if (decodes >= 2) seen.batched_decode_kv = std::max(seen.batched_decode_kv, decode_kv);
        EXPECT_LT(step, 2000) << "the jobs never ended";
        if (step >= 2000) break;
    }
    for (size_t i = 0; i < ps.size(); ++i) {
        expect_same(got[i], alone[i], i);
        EXPECT_EQ(got[i].stop, alone[i].stop) << "job " << i;
    }
    return seen;
}

TEST(BatchDecoder, JobsGenerateWhatTheyGenerateAloneOnSmolLM2) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    cpu::CpuBackend be(2);
    auto model = load_smollm2(path, be);
    const auto ps = prompts(*model);
    // Greedy for three jobs, seeded sampling for one: its random stream is its own.
    std::vector<SamplingParams> sp(ps.size(), greedy());
    sp[1].temperature = 0.9f;
    sp[1].seed = 1234;
    // Chunks of 16: the long prompt takes several steps beside the others' decodes.
    EXPECT_TRUE(expect_batched_equal_solo(*model, ps, sp, 24, 16).mixed);
}

TEST(BatchDecoder, JobsGenerateWhatTheyGenerateAloneOnGemma3PastItsWindow) {
    // Gemma 3's sliding-window layers (512 keys) in a batch: one prompt longer than the window,
    // computed in chunks, then decoded beside two short ones.
    FLUORO_REQUIRE_MODEL(path, test::kGemma3File);
    cpu::CpuBackend be(2);
    ModelLoadOptions lo;
    lo.max_batch = 128;
    lo.max_logit_rows = 4;
    auto model = Model::load(path, be, lo);
    std::string longer;
    for (int i = 0; i < 70; ++i) longer += "Line " + std::to_string(i) + " of the long text. ";
    std::vector<std::vector<int32_t>> ps;
    // The long one first: the others join while its prompt is computed and decode beside it, so
    // its decode steps past 512 keys (two of flash attention's key ranges) run in batches of 2-3.
    for (const std::string& t : {longer, std::string("The capital of France is"),
                                 std::string("Once upon a time, in a small village,")})
        ps.push_back(model->tokenizer().encode(t, true, false));
    ASSERT_GT(ps[0].size(), 600u);
    const Seen seen = expect_batched_equal_solo(
        *model, ps, std::vector<SamplingParams>(ps.size(), greedy()), 8, 96, 1024);
    EXPECT_GT(seen.batched_decode_kv, 512);
}

TEST(BatchDecoder, ACancelledJobEndsAndTheOthersAreUndisturbed) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    cpu::CpuBackend be(2);
    auto model = load_smollm2(path, be);
    const auto ps = prompts(*model);
    const Trace alone = solo(*model, ps[0], greedy(), 20);
    auto kv = model->create_kv(batch_shape(2, 0));
    BatchDecoder dec(*model, *kv, nullptr, {2, 64});
    std::atomic<bool> cancel{false};
    Trace kept, stopped;
    BatchJob a;
    a.prompt = ps[0];
    a.sampling = greedy();
    a.options.max_tokens = 20;
    a.on_token = [&](const GeneratedToken& g) { record(kept, g); };
    a.tag = 1;
    BatchJob b = a;
    b.prompt = ps[2];
    b.options.max_tokens = 200;
    b.on_token = [&](const GeneratedToken& g) {
        record(stopped, g);
        if (stopped.tokens.size() == 5) cancel = true;  // as a client that goes away
    };
    b.cancel = &cancel;
    b.tag = 2;
    dec.start(std::move(a));
    dec.start(std::move(b));
    std::optional<BatchEnded> b_end;
    for (int i = 0; dec.active() > 0 && i < 100; ++i)
        for (BatchEnded& e : dec.step()) {
            if (e.tag == 2) {
                b_end = std::move(e);
            } else {
                kept.stop = e.result.stop;
                kept.text = e.result.text;
            }
        }
    ASSERT_TRUE(b_end.has_value());
    EXPECT_EQ(b_end->result.stop, StopReason::Cancelled);
    EXPECT_EQ(stopped.tokens.size(), 5u);  // cancelled before the next step computed anything
    EXPECT_EQ(dec.active(), 0);
    expect_same(kept, alone, 0);
}

TEST(BatchDecoder, ALaterJobReusesTheSharedPromptFromThePrefixCache) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    cpu::CpuBackend be(2);
    auto model = load_smollm2(path, be);
    const auto ps = prompts(*model);
    const std::vector<int32_t>& prompt = ps[3];
    const Trace alone = solo(*model, prompt, greedy(), 8);
    auto kv = model->create_kv(batch_shape(2, 4));
    auto* paged = dynamic_cast<PagedKvCache*>(kv.get());
    ASSERT_NE(paged, nullptr);
    PrefixCache cache(*paged, 2, 4);
    BatchDecoder dec(*model, *kv, &cache, {2, 256});
    Trace first, second;
    BatchJob a;
    a.prompt = prompt;
    a.sampling = greedy();
    a.options.max_tokens = 8;
    a.on_token = [&](const GeneratedToken& g) { record(first, g); };
    BatchJob b = a;
    b.on_token = [&](const GeneratedToken& g) { record(second, g); };
    b.tag = 1;
    const int64_t slot_a = dec.start(std::move(a));
    dec.step();  // a's prompt is computed (and cached) in one step
    const int64_t slot_b = dec.start(std::move(b));
    EXPECT_NE(slot_a, slot_b);  // a still runs
    std::vector<BatchEnded> ends;
    for (int i = 0; dec.active() > 0 && i < 100; ++i)
        for (BatchEnded& e : dec.step()) ends.push_back(std::move(e));
    ASSERT_EQ(ends.size(), 2u);
    for (const BatchEnded& e : ends) {
        (e.tag == 1 ? second : first).text = e.result.text;
        if (e.tag != 1) continue;
        EXPECT_TRUE(e.result.prefill.from_prefix_cache);
        EXPECT_EQ(e.result.prefill.reused_tokens, int64_t(prompt.size()) - 1);
        EXPECT_EQ(e.result.prefill.computed_tokens, 1);
    }
    expect_same(first, alone, 0);
    expect_same(second, alone, 1);
}

TEST(BatchDecoder, RefusesWhatItCannotRun) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    cpu::CpuBackend be(2);
    auto model = load_smollm2(path, be);
    auto kv = model->create_kv(batch_shape(2, 0));
    EXPECT_THROW(BatchDecoder(*model, *kv, nullptr, {3, 64}), Error);  // 2 sequences
    EXPECT_THROW(BatchDecoder(*model, *kv, nullptr, {2, 0}), Error);   // no prefill budget
    auto kv16 = model->create_kv(batch_shape(16, 0));
    EXPECT_THROW(BatchDecoder(*model, *kv16, nullptr, {16, 64}), Error);  // 8 logit rows
    BatchDecoder dec(*model, *kv, nullptr, {2, 64});
    BatchJob j;
    j.prompt.assign(size_t(kCtx) + 1, 1);
    EXPECT_THROW(dec.start(j), ContextOverflowError);
    EXPECT_EQ(dec.active(), 0);
    j.prompt.assign(4, 1);
    j.options.max_tokens = 4;
    dec.start(j);
    dec.start(j);
    EXPECT_THROW(dec.start(j), Error);  // both slots busy
    EXPECT_EQ(dec.active(), 2);
}

}  // namespace
}  // namespace fluoro
