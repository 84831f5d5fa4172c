// Sequence with a PrefixCache: a conversation displaced by another is found again later, only the
// uncached rest of the prompt is computed, and the logits equal a fresh prefill's bit for bit.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "decode/sequence.h"
#include "gguf/test_model.h"
#include "kv/paged_kv.h"
#include "kv/prefix_cache.h"
#include "model/model.h"
#include "test_models.h"
#include "test_temp.h"

namespace fluoro {
namespace {

std::vector<float> fresh_logits(Model& model, std::span<const int32_t> prompt) {
    auto kv = model.create_kv(512, 1, KvType::F16);
    Sequence seq(model, *kv, 0);
    const auto l = seq.prefill(prompt);
    return {l.begin(), l.end()};
}

// Three conversations through one sequence: a (system + question 1), b (something else), then
// c (a's system prompt + question 2). With the cache, c reuses a's shared prefix although b came
// in between; its logits equal a fresh prefill of c.
void check_cache(Model& model, const std::vector<int32_t>& a, const std::vector<int32_t>& b,
                 const std::vector<int32_t>& c, int64_t shared) {
    KvShape ks;
    ks.n_ctx = 512;
    ks.n_seq = 1 + 4;
    ks.pool_tokens = 1024;
    auto kv = model.create_kv(ks);
    auto* paged = dynamic_cast<PagedKvCache*>(kv.get());
    ASSERT_NE(paged, nullptr);
    PrefixCache cache(*paged, 1, 4);
    Sequence seq(model, *kv, 0);
    seq.set_prefix_cache(&cache);

    PrefillStats st;
    seq.prefill(a, &st);
    EXPECT_EQ(st.reused_tokens, 0);
    EXPECT_FALSE(st.from_prefix_cache);
    EXPECT_EQ(st.diverge_at, -1);  // nothing was cached: a miss, not a divergence
    seq.prefill(b, &st);
    EXPECT_EQ(cache.stats().entries, 1);  // a, kept when b displaced it
    EXPECT_EQ(st.reused_tokens, 0);
    // b's first token differs from what this conversation (a) held there.
    EXPECT_EQ(st.diverge_at, 0);
    EXPECT_EQ(st.diverge_prompt_token, b[0]);
    EXPECT_EQ(st.diverge_cached_token, a[0]);
    // Copied: the returned span is the model's logits buffer, which the reference runs below
    // overwrite (comparing the span would compare the reference with itself).
    const auto ls = seq.prefill(c, &st);
    const std::vector<float> l(ls.begin(), ls.end());
    EXPECT_EQ(st.reused_tokens, shared);
    EXPECT_EQ(st.computed_tokens, int64_t(c.size()) - shared);
    // Reused from the entry a left behind, and it diverged from a exactly where c does.
    EXPECT_TRUE(st.from_prefix_cache);
    EXPECT_EQ(st.diverge_at, shared);
    EXPECT_EQ(st.diverge_prompt_token, c[size_t(shared)]);
    EXPECT_EQ(st.diverge_cached_token, a[size_t(shared)]);
    EXPECT_EQ(st.evicted_entries, 0);
    EXPECT_EQ(seq.last_prefill().reused_tokens, shared);
    const std::vector<float> want = fresh_logits(model, c);
    ASSERT_EQ(l.size(), want.size());
    EXPECT_EQ(std::memcmp(l.data(), want.data(), want.size() * sizeof(float)), 0)
        << "logits after a cache hit differ from a fresh prefill";
    // And decoding on from there matches too.
    const auto ds = seq.decode(c.front());
    const std::vector<float> d(ds.begin(), ds.end());
    auto kv2 = model.create_kv(512, 1, KvType::F16);
    Sequence ref(model, *kv2, 0);
    ref.prefill(c);
    const auto e = ref.decode(c.front());
    EXPECT_EQ(std::memcmp(d.data(), e.data(), e.size() * sizeof(float)), 0);
    cache.check_invariants();
    paged->check_invariants();

    // Without a cache, c shares nothing with b: everything is recomputed.
    auto kv3 = model.create_kv(ks);
    Sequence plain(model, *kv3, 0);
    plain.prefill(a);
    plain.prefill(b);
    plain.prefill(c, &st);
    EXPECT_EQ(st.reused_tokens, 0);
}

TEST(SequencePrefixCache, ReusesADisplacedConversationOnASmallModel) {
    gguf::TestModelSpec spec;
    spec.weight_type = GgmlType::Q8_0;
    const auto path = test::unique_temp_path("prefix_cache_small.gguf");
    gguf::write_test_model(path, spec);
    cpu::CpuBackend be(2);
    auto model = Model::load(path, be);
    std::vector<int32_t> sys;
    for (int i = 0; i < 37; ++i) sys.push_back(int32_t(3 + (i * 13) % 200));
    std::vector<int32_t> a = sys, c = sys;
    for (int32_t t : {5, 6, 7, 8}) a.push_back(t);
    for (int32_t t : {9, 10, 11}) c.push_back(t);
    const std::vector<int32_t> b = {250, 251, 252, 253, 254, 255};
    check_cache(*model, a, b, c, int64_t(sys.size()));
}

TEST(SequencePrefixCache, ReusesADisplacedConversationOnSmolLM2) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    cpu::CpuBackend be(2);
    auto model = Model::load(path, be);
    const tok::Tokenizer& tok = model->tokenizer();
    const std::string sys =
        "You are a support agent for ACME. Answer briefly. Tools: get_order(id), refund(id). ";
    const std::vector<int32_t> a = tok.encode(sys + "Where is order 17?", true, false),
                               b = tok.encode("Write a haiku about rain.", true, false),
                               c = tok.encode(sys + "Refund order 9 please.", true, false);
    int64_t shared = 0;
    while (size_t(shared) < a.size() && size_t(shared) < c.size() &&
           a[size_t(shared)] == c[size_t(shared)])
        ++shared;
    ASSERT_GT(shared, 10);
    check_cache(*model, a, b, c, shared);
}

}  // namespace
}  // namespace fluoro
