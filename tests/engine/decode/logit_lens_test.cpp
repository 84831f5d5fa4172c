// The logit lens (decode/logit_lens.h) on the real default models: its last layer is the model's
// own prediction bit for bit, each layer L is what an early-exit pass of L layers computes from
// scratch, and the cache is left byte for byte as it was.
#include <gtest/gtest.h>

#include <cstring>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "decode/logit_lens.h"
#include "decode/sequence.h"
#include "engine/kv/kv_test_rows.h"
#include "model/model.h"
#include "test_models.h"

namespace fluoro {
namespace {

std::vector<std::byte> cache_bytes(const KvCache& kv, int64_t seq) {
    std::vector<std::byte> out;
    const KvShape& sh = kv.shape();
    for (int64_t il = 0; il < sh.n_layer; ++il)
        for (int64_t p = 0; p < kv.length(seq); ++p) {
            const std::vector<std::byte> k = test::k_bytes(kv, il, seq, p);
            const std::vector<std::byte> v = test::v_bytes(kv, il, seq, p);
            out.insert(out.end(), k.begin(), k.end());
            out.insert(out.end(), v.begin(), v.end());
        }
    return out;
}

void expect_same(const DistTop& a, const DistTop& b, const std::string& what) {
    ASSERT_EQ(a.top.size(), b.top.size()) << what;
    for (size_t i = 0; i < a.top.size(); ++i) {
        EXPECT_EQ(a.top[i].id, b.top[i].id) << what << " rank " << i;
        EXPECT_EQ(a.top[i].logprob, b.top[i].logprob) << what << " rank " << i;
    }
    EXPECT_EQ(a.entropy, b.entropy) << what;
    EXPECT_EQ(a.target_rank, b.target_rank) << what;
    EXPECT_EQ(a.target_logprob, b.target_logprob) << what;
}

void check_model(const std::filesystem::path& path) {
    cpu::CpuBackend be(2);
    auto model = Model::load(path, be);
    auto kv = model->create_kv(256, 1, KvType::F16);
    Sequence seq(*model, *kv, 0);
    const std::vector<int32_t> prompt = model->tokenizer().encode(
        "The capital of France is Paris, and the capital of", true, false);
    seq.prefill(prompt);
    // Three decoded tokens; the lens looks at the position of the second one, whose logits
    // (one decode step, as the lens' passes are) predicted the third.
    std::vector<float> logits_at_p;
    const std::vector<int32_t> fed{model->tokenizer().encode(" Germany", false, false).at(0), 374,
                                   1000};
    for (size_t i = 0; i < fed.size(); ++i) {
        const auto l = seq.decode(fed[i]);
        if (i == 1) logits_at_p.assign(l.begin(), l.end());
    }
    const int64_t slot = int64_t(prompt.size()) + 1;
    const auto before = cache_bytes(*kv, 0);

    LensRequest r;
    r.slot = slot;
    r.token = fed[1];
    r.target = fed[2];
    r.top_k = 8;
    const std::vector<DistTop> lens = logit_lens(*model, *kv, r);
    const int64_t n_layer = int64_t(model->hparams().n_layer);
    ASSERT_EQ(int64_t(lens.size()), n_layer);
    expect_same(lens.back(), dist_top(logits_at_p, 8, fed[2]), "last layer vs the decode step");
    EXPECT_EQ(cache_bytes(*kv, 0), before) << "the lens changed the cache";

    // Layer L against an early-exit model of L layers decoding the same tokens from scratch.
    bool differs = false;
    for (const int64_t L : {int64_t(1), n_layer / 2, n_layer - 1}) {
        auto kv2 = model->create_kv(256, 1, KvType::F16);
        Sequence exit(*model, *kv2, 0);
        exit.set_exit_layer(L);
        exit.prefill(prompt);
        exit.decode(fed[0]);
        const auto l = exit.decode(fed[1]);
        expect_same(lens[size_t(L - 1)], dist_top(l, 8, fed[2]), "layer " + std::to_string(L));
        differs |= lens[size_t(L - 1)].top[0].id != lens.back().top[0].id;
    }
    EXPECT_TRUE(differs) << "every layer predicts what the last does: the lens shows nothing";

    // The conversation goes on exactly as without the lens.
    const auto next = seq.decode(7);
    std::vector<float> after(next.begin(), next.end());
    auto kv3 = model->create_kv(256, 1, KvType::F16);
    Sequence plain(*model, *kv3, 0);
    plain.prefill(prompt);
    for (const int32_t t : fed) plain.decode(t);
    const auto want = plain.decode(7);
    EXPECT_EQ(std::memcmp(after.data(), want.data(), after.size() * sizeof(float)), 0);

    r.slot = kv->length(0);
    EXPECT_THROW(logit_lens(*model, *kv, r), Error);  // not cached
    r.slot = slot;
    r.top_k = 0;
    EXPECT_THROW(logit_lens(*model, *kv, r), Error);
}

TEST(LogitLens, SmolLM2LastLayerIsTheModelEachLayerAnEarlyExitCacheUntouched) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    check_model(path);
}

TEST(LogitLens, Gemma3LastLayerIsTheModelEachLayerAnEarlyExitCacheUntouched) {
    FLUORO_REQUIRE_MODEL(path, test::kGemma3File);
    check_model(path);
}

TEST(DistTop, TopEntropyAndTargetRank) {
    const std::vector<float> logits{0.0f, 2.0f, 1.0f, 2.0f, -1.0f};
    const DistTop d = dist_top(logits, 3, 2);
    ASSERT_EQ(d.top.size(), 3u);
    EXPECT_EQ(d.top[0].id, 1);  // a tie with id 3: the lower id first
    EXPECT_EQ(d.top[1].id, 3);
    EXPECT_EQ(d.top[2].id, 2);
    double z = 0;
    for (const float l : logits) z += std::exp(double(l));
    EXPECT_NEAR(d.top[0].logprob, 2.0 - std::log(z), 1e-6);
    double h = 0;
    for (const float l : logits) h -= std::exp(l - std::log(z)) * (l - std::log(z));
    EXPECT_NEAR(d.entropy, h, 1e-12);
    EXPECT_EQ(d.target_rank, 2);
    EXPECT_EQ(dist_top(logits, 10, -1).top.size(), 5u);
    EXPECT_EQ(dist_top(logits, 10, -1).target_rank, -1);
}

}  // namespace
}  // namespace fluoro
