// A Sequence under a KV policy (kv/kv_policy.h) on the real SmolLM2: compaction re-rotates the kept
// keys to their new positions, StreamingLLM carries generation three times past the context at a
// stable perplexity, rollback and multi-turn reuse stay correct after evictions, and scoring
// policies run on the backend's accumulated attention.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/kv_rows.h"
#include "core/error.h"
#include "decode/sequence.h"
#include "engine/kv/kv_test_rows.h"
#include "model/model.h"
#include "test_models.h"
#include "test_paths.h"

namespace fluoro {
namespace {

std::vector<int32_t> genesis_tokens(const Model& model, size_t n) {
    std::ifstream in(std::filesystem::path(FLUORO_FIXTURES_DIR).parent_path() / "data" /
                     "kjv_genesis.txt");
    std::stringstream text;
    text << in.rdbuf();
    std::vector<int32_t> ids = model.tokenizer().encode(text.str(), true, false);
    if (ids.size() > n) ids.resize(n);
    return ids;
}

double nll(std::span<const float> logits, int32_t target) {
    double mx = -1e30;
    for (float v : logits) mx = std::max(mx, double(v));
    double sum = 0;
    for (float v : logits) sum += std::exp(double(v) - mx);
    return std::log(sum) + mx - double(logits[size_t(target)]);
}

// Mean NLL of tokens [1, n) decoded one at a time, per third of the text.
std::array<double, 3> nll_by_third(Sequence& seq, std::span<const int32_t> ids) {
    std::array<double, 3> sum{}, count{};
    std::span<const float> logits = seq.prefill(ids.first(1));
    for (size_t i = 1; i < ids.size(); ++i) {
        const size_t third = std::min<size_t>(2, 3 * i / ids.size());
        sum[third] += nll(logits, ids[i]);
        count[third] += 1;
        logits = seq.decode(ids[i]);
    }
    return {sum[0] / count[0], sum[1] / count[1], sum[2] / count[2]};
}

std::vector<float> layer0_k(const KvCache& kv, int64_t slot) {
    const KvShape& s = kv.shape();
    std::vector<float> row(size_t(s.k_row_elems(0)));
    cpu::kv_load(s.type.k, test::k_bytes(kv, 0, 0, slot).data(), row.data(), int64_t(row.size()));
    return row;
}

class SequencePolicy : public ::testing::Test {
  protected:
    void load(const std::filesystem::path& path) {
        be = std::make_unique<cpu::CpuBackend>(2);
        model = Model::load(path, *be);
    }
    std::unique_ptr<cpu::CpuBackend> be;
    std::unique_ptr<Model> model;
};

// Layer 0's keys depend only on the token and its position: after an eviction, the compacted
// cache's layer-0 keys must equal those a fresh prefill of the kept tokens computes.
void expect_compaction_rerotates(Model& model) {
    const std::vector<int32_t> ids = genesis_tokens(model, 40);
    ASSERT_EQ(ids.size(), 40u);
    auto kv = model.create_kv(128, 1, KvType::F32);
    Sequence seq(model, *kv, 0);
    seq.prefill(std::span(ids).first(40));
    std::vector<int64_t> keep{0, 1, 2, 3};
    for (int64_t j = 20; j < 40; ++j) keep.push_back(j);
    model.compact_kv(*kv, 0, keep);

    std::vector<int32_t> kept;
    for (int64_t j : keep) kept.push_back(ids[size_t(j)]);
    auto fresh_kv = model.create_kv(128, 1, KvType::F32);
    Sequence fresh(model, *fresh_kv, 0);
    fresh.prefill(kept);
    ASSERT_EQ(kv->length(0), int64_t(keep.size()));
    double worst = 0;
    for (size_t i = 0; i < keep.size(); ++i) {
        const std::vector<float> a = layer0_k(*kv, int64_t(i)), b = layer0_k(*fresh_kv, int64_t(i));
        for (size_t d = 0; d < a.size(); ++d)
            worst = std::max(worst, double(std::abs(a[d] - b[d])) / (1.0 + std::abs(b[d])));
        EXPECT_EQ(test::v_bytes(*kv, 0, 0, int64_t(i)), test::v_bytes(*fresh_kv, 0, 0, int64_t(i)))
            << "value row " << i << " moved wrongly";
    }
    EXPECT_LT(worst, 2e-5) << "re-rotated keys differ from keys computed at the new positions";
}

TEST_F(SequencePolicy, CompactionRerotatesKeysOnSmolLM2) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    load(path);
    expect_compaction_rerotates(*model);
}

TEST_F(SequencePolicy, CompactionRerotatesKeysOnGemma3) {
    FLUORO_REQUIRE_MODEL(path, test::kGemma3File);
    load(path);
    expect_compaction_rerotates(*model);
}

// StreamingLLM's claim at our scale: with 4 sinks + a recent window inside a 256-token context,
// decoding 768 tokens of Genesis keeps its perplexity; the last third is no worse than the first
// (which had the whole context to itself).
TEST_F(SequencePolicy, StreamingRunsThreeTimesPastTheContext) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    load(path);
    const std::vector<int32_t> ids = genesis_tokens(*model, 3 * 256);
    ASSERT_EQ(ids.size(), 768u);
    auto kv = model->create_kv(256, 1, KvType::F16);
    Sequence seq(*model, *kv, 0);
    KvPolicyConfig cfg;
    cfg.kind = KvPolicyKind::Streaming;
    seq.set_kv_policy(cfg);
    const auto thirds = nll_by_third(seq, ids);
    const auto ev = seq.take_evictions();
    EXPECT_GT(ev.size(), 20u);
    for (const SequenceEviction& e : ev) {
        ASSERT_GE(e.kept.size(), 4u);
        for (int64_t j = 0; j < 4; ++j) EXPECT_EQ(e.kept[size_t(j)], j) << "a sink was evicted";
    }
    EXPECT_LE(int64_t(seq.cached_tokens().size()), 256);
    EXPECT_EQ(seq.tokens().size(), ids.size());
    std::cout << "[ streaming ] mean NLL by third: " << thirds[0] << " " << thirds[1] << " "
              << thirds[2] << "\n";
    EXPECT_TRUE(std::isfinite(thirds[2]));
    EXPECT_LT(thirds[2], thirds[0] * 1.15) << "perplexity degraded past the context";
}

TEST_F(SequencePolicy, RollbackAndNextTurnAfterEviction) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    load(path);
    const std::vector<int32_t> ids = genesis_tokens(*model, 200);
    auto kv = model->create_kv(128, 1, KvType::F16);
    Sequence seq(*model, *kv, 0);
    KvPolicyConfig cfg;
    cfg.kind = KvPolicyKind::Window;
    cfg.budget = 64;
    seq.set_kv_policy(cfg);
    PrefillStats st;
    seq.prefill(std::span(ids).first(150), &st);  // in chunks of at most 32, evicting
    EXPECT_EQ(st.computed_tokens, 150);
    EXPECT_LE(int64_t(seq.cached_tokens().size()), 64);
    EXPECT_FALSE(seq.take_evictions().empty());
    // The next turn extends the conversation: nothing is recomputed.
    seq.prefill(std::span(ids).first(180), &st);
    EXPECT_EQ(st.reused_tokens, 150);
    EXPECT_EQ(st.computed_tokens, 30);
    // Rollback to position 170 keeps exactly the slots of positions before it.
    seq.truncate(170);
    EXPECT_EQ(seq.tokens().size(), 170u);
    ASSERT_FALSE(seq.slot_positions().empty());
    EXPECT_EQ(seq.slot_positions().back(), 169);
    EXPECT_EQ(kv->length(0), int64_t(seq.cached_tokens().size()));
    for (size_t i = 0; i < seq.cached_tokens().size(); ++i)
        EXPECT_EQ(seq.cached_tokens()[i], ids[size_t(seq.slot_positions()[i])]);
}

TEST_F(SequencePolicy, FullPolicyStopsAtItsBudget) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    load(path);
    const std::vector<int32_t> ids = genesis_tokens(*model, 70);
    auto kv = model->create_kv(128, 1, KvType::F16);
    Sequence seq(*model, *kv, 0);
    KvPolicyConfig cfg;
    cfg.budget = 64;
    seq.set_kv_policy(cfg);
    EXPECT_THROW(seq.prefill(ids), Error);
    seq.prefill(std::span(ids).first(64));
    EXPECT_EQ(seq.remaining(), 0);
    EXPECT_THROW(seq.decode(ids[64]), Error);
}

// H2O and Scissorhands read the accumulated attention: with the statistics on they evict, keep
// the sinks, and the model goes on producing finite logits.
TEST_F(SequencePolicy, ScoringPoliciesEvictOnAccumulatedAttention) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    load(path);
    const std::vector<int32_t> ids = genesis_tokens(*model, 160);
    // Without the statistics a scoring policy says what it needs.
    {
        auto kv = model->create_kv(256, 1, KvType::F16);
        Sequence seq(*model, *kv, 0);
        KvPolicyConfig cfg;
        cfg.kind = KvPolicyKind::H2O;
        cfg.budget = 64;
        seq.set_kv_policy(cfg);
        try {
            seq.prefill(std::span(ids).first(100));
            FAIL() << "no error";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("attention"), std::string::npos) << e.what();
        }
    }
    AttentionCapture cap;
    cap.stats = true;
    be->set_attention_capture(&cap);
    for (KvPolicyKind kind :
         {KvPolicyKind::H2O, KvPolicyKind::Scissorhands, KvPolicyKind::SnapKV}) {
        auto kv = model->create_kv(256, 1, KvType::F16);
        Sequence seq(*model, *kv, 0);
        KvPolicyConfig cfg;
        cfg.kind = kind;
        cfg.budget = 64;
        seq.set_kv_policy(cfg);
        std::span<const float> logits = seq.prefill(std::span(ids).first(100));
        for (size_t i = 100; i < ids.size(); ++i) {
            logits = seq.decode(ids[i]);
            cap.sparsity.clear();
        }
        for (float v : logits) ASSERT_TRUE(std::isfinite(v));
        const auto ev = seq.take_evictions();
        ASSERT_FALSE(ev.empty()) << kv_policy_name(kind);
        bool heavy = false;
        for (const SequenceEviction& e : ev) {
            for (int64_t j = 0; j < 4; ++j) EXPECT_EQ(e.kept[size_t(j)], j);
            for (KvKeepReason r : e.reasons) heavy |= r == KvKeepReason::Heavy;
        }
        EXPECT_TRUE(heavy) << kv_policy_name(kind) << " kept no token for its score";
        EXPECT_LE(int64_t(seq.cached_tokens().size()), 64);
    }
    be->set_attention_capture(nullptr);
}

// SnapKV caches the whole prompt, then compresses it once, by what the observation window
// attended to: one eviction, after the prefill, from the prompt's full length.
TEST_F(SequencePolicy, SnapKVCompressesTheWholePromptOnce) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    load(path);
    const std::vector<int32_t> ids = genesis_tokens(*model, 150);
    AttentionCapture cap;
    cap.stats = true;
    be->set_attention_capture(&cap);
    auto kv = model->create_kv(256, 1, KvType::F16);
    Sequence seq(*model, *kv, 0);
    KvPolicyConfig cfg;
    cfg.kind = KvPolicyKind::SnapKV;
    cfg.budget = 64;
    seq.set_kv_policy(cfg);
    seq.prefill(ids);
    be->set_attention_capture(nullptr);
    const auto ev = seq.take_evictions();
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].length_before, 150);
    EXPECT_LT(int64_t(ev[0].kept.size()), 64);
    // The observation window (the last 16 = budget/4 prompt tokens) is kept whole.
    for (int64_t j = 0; j < 16; ++j)
        EXPECT_EQ(ev[0].kept[ev[0].kept.size() - 16 + size_t(j)], 134 + j);
}

// The accumulated attention follows the cache it is computed for: a larger cache after a smaller
// one gets scores of its own size (it once kept the first cache's buffer and wrote past it).
TEST_F(SequencePolicy, KeyScoresFollowTheCacheShape) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    load(path);
    const std::vector<int32_t> ids = genesis_tokens(*model, 200);
    AttentionCapture cap;
    cap.stats = true;
    be->set_attention_capture(&cap);
    for (int64_t ctx : {64, 256}) {
        auto kv = model->create_kv(ctx, 1, KvType::F16);
        Sequence seq(*model, *kv, 0);
        seq.prefill(std::span(ids).first(size_t(ctx) - 8));
        seq.decode(ids[size_t(ctx) - 8]);
        EXPECT_EQ(be->attention_key_scores(0, 0, 0).size(), size_t(ctx));
    }
    be->set_attention_capture(nullptr);
}

}  // namespace
}  // namespace fluoro
