// Multi-head latent attention (arch_deepseek2.cpp) beyond the logits that arch_llamacpp_test holds
// to llama.cpp: what each path caches, that the two paths are one model, and that a cache shift
// re-rotates only the RoPE dims of the cached rows. On the deepseek2 fixture
// (tests/reference/make_arch_fixtures.py: 4 heads of 16 no-RoPE + 8 RoPE key dims and 16 value
// dims, a latent of 32, 3 layers).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "decode/sequence.h"
#include "engine/model/fixture_forward.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "kv/paged_kv.h"
#include "kv/prefix_cache.h"
#include "kv/prefix_cache_file.h"
#include "model/model.h"
#include "runtime/prefix_cache_persistence.h"
#include "tensor/fp16.h"
#include "test_models.h"
#include "test_temp.h"

namespace fluoro {
namespace {

using nlohmann::json;

std::unique_ptr<Model> load(const std::string& fixture, Backend& be, MlaPath path,
                            int64_t batch = 64) {
    ModelLoadOptions opt;
    opt.max_batch = batch;
    opt.max_logit_rows = batch;
    opt.mla = path;
    return Model::load(test::fixtures_dir() / ("arch_" + fixture + ".gguf"), be, opt);
}

std::vector<int32_t> fixture_ids(const std::string& fixture) {
    std::ifstream in(test::fixtures_dir() / ("arch_" + fixture + ".json"));
    return json::parse(in)["ids"].get<std::vector<int32_t>>();
}

double rms(const std::vector<float>& v) {
    double s = 0;
    for (float x : v) s += double(x) * x;
    return std::sqrt(s / double(v.size()));
}

// Per token and layer the absorbed path caches one key of RoPE + latent dims (8 + 32), the
// paper's latent cache, and reads its values (the latent, 32) out of those rows; the naive path
// caches every head's key (4 x 24) and value (4 x 16): 160 elements. After a forward step the
// values the absorbed path attends to are the bytes of the keys' latent dims. With a value type
// other than the keys' (f32 values here) the latent is stored a second time, at its own type.
TEST(Mla, EachPathCachesWhatItAttends) {
    cpu::CpuBackend be(2);
    const std::vector<int32_t> ids = fixture_ids("deepseek2");
    for (MlaPath path : {MlaPath::Absorbed, MlaPath::Naive}) {
        const auto model = load("deepseek2", be, path);
        const auto kv = model->create_kv(64, 1, KvType::F16);
        const KvShape& s = kv->shape();
        const bool absorbed = path == MlaPath::Absorbed;
        EXPECT_EQ(s.n_head_kv, std::vector<int64_t>(3, absorbed ? 1 : 4));
        EXPECT_EQ(s.head_dim_k, absorbed ? 8 + 32 : 8 + 16);
        EXPECT_EQ(s.head_dim_v, absorbed ? 32 : 16);
        EXPECT_EQ(s.values_in_keys(), absorbed);
        EXPECT_EQ(s.bytes_per_token(), size_t(3 * (absorbed ? 40 : 160) * 2));  // 3 layers, f16
        if (!absorbed) continue;
        test::forward_last(*model, *kv, std::span<const int32_t>(ids).first(5), 0);
        for (int64_t il = 0; il < 3; ++il)
            for (int64_t pos = 0; pos < 5; ++pos) {
                std::vector<uint16_t> k(40), v(32);
                kv->read_k(il, 0, pos, k.data());
                kv->read_v(il, 0, pos, v.data());
                EXPECT_TRUE(std::equal(v.begin(), v.end(), k.begin() + 8))
                    << "layer " << il << " pos " << pos;
            }
        const auto apart = model->create_kv(64, 1, KvTypes(KvType::F16, KvType::F32));
        EXPECT_FALSE(apart->shape().values_in_keys());
        EXPECT_EQ(apart->shape().bytes_per_token(), size_t(3 * (40 * 2 + 32 * 4)));
    }
}

// Both paths compute one model: on the 200-token sequence (fed in chunks of 64, so cached rows are
// attended too) their logits agree within the bound arch_llamacpp_test holds each of them to
// against llama.cpp (kMaxRel 0.075 of the RMS logit, derived there from F16 rounding), and their
// argmax agrees except at near-ties of that size.
TEST(Mla, NaiveAndAbsorbedAreOneModel) {
    cpu::CpuBackend be(2);
    const std::vector<int32_t> ids = fixture_ids("deepseek2_legacy");
    std::vector<float> out[2];
    for (int i = 0; i < 2; ++i) {
        const auto model = load("deepseek2_legacy", be, i ? MlaPath::Naive : MlaPath::Absorbed);
        const auto kv = model->create_kv(256, 1, KvType::F16);
        out[i] = test::forward_in_chunks(*model, *kv, ids, 64);
    }
    const double scale = rms(out[1]);
    double max_abs = 0;
    for (size_t i = 0; i < out[0].size(); ++i)
        max_abs = std::max(max_abs, double(std::abs(out[0][i] - out[1][i])));
    std::printf("[mla] naive vs absorbed: max |d| %.5f (%.5f of the RMS logit %.3f)\n", max_abs,
                max_abs / scale, scale);
    EXPECT_LT(max_abs, 0.075 * scale);
}

// Dropping cached tokens (Model::compact_kv, StreamingLLM's shift) re-rotates each kept key by its
// position change. The absorbed cache row is [k_R, latent]: only its first 8 dims may turn
// (layer_rope's n_rot); rotating the latent too would be another model. Layer 0's keys depend on
// their own token only (k_R and the latent are projections of its embedding), so after dropping
// positions 10-19 of 40 each kept layer-0 key must be the key a fresh cache computes for that
// token at its new position. Within F16 rounding: the shifted row was rounded at its old
// position, turned and rounded again, the fresh one rounded once — at most 3 roundings of
// 2^-11 relative to a pair's magnitude, bounded here by 4 x 2^-11 of the row's largest value.
// (Later layers' keys are not comparable: they attended to the dropped tokens.)
TEST(Mla, CompactionTurnsOnlyTheRopeDims) {
    cpu::CpuBackend be(2);
    const std::vector<int32_t> ids = fixture_ids("deepseek2");
    for (MlaPath path : {MlaPath::Absorbed, MlaPath::Naive}) {
        const auto model = load("deepseek2", be, path);
        const auto run = [&](KvCache& kv, std::span<const int32_t> toks) {
            test::forward_last(*model, kv, toks, 0);
        };
        auto kv = model->create_kv(64, 1, KvType::F16);
        run(*kv, std::span<const int32_t>(ids).first(40));
        std::vector<int64_t> keep;
        std::vector<int32_t> kept;
        for (int64_t i = 0; i < 40; ++i)
            if (i < 10 || i >= 20) keep.push_back(i), kept.push_back(ids[size_t(i)]);
        model->compact_kv(*kv, 0, keep);
        auto fresh = model->create_kv(64, 1, KvType::F16);
        run(*fresh, kept);
        const KvShape& s = kv->shape();
        const int64_t width = s.n_head_kv[0] * s.head_dim_k;
        std::vector<uint16_t> a(static_cast<size_t>(width)), b(static_cast<size_t>(width));
        double worst = 0;  // |shifted - fresh| / (2^-11 x the row's largest |value|)
        int64_t rope_dims_moved = 0;
        for (int64_t p = 10; p < 30; ++p) {  // the kept tokens that moved (by 10)
            kv->read_k(0, 0, p, a.data());
            fresh->read_k(0, 0, p, b.data());
            double top = 0;
            for (int64_t i = 0; i < width; ++i)
                top = std::max(top, double(std::abs(fp16_to_fp32(b[size_t(i)]))));
            for (int64_t i = 0; i < width; ++i) {
                const double d =
                    std::abs(double(fp16_to_fp32(a[size_t(i)])) - fp16_to_fp32(b[size_t(i)]));
                worst = std::max(worst, d / (top * 0x1p-11));
            }
        }
        // The keys did move: before the shift, slot p held the key of position p + 10.
        auto unshifted = model->create_kv(64, 1, KvType::F16);
        run(*unshifted, std::span<const int32_t>(ids).first(40));
        for (int64_t p = 10; p < 30; ++p) {
            unshifted->read_k(0, 0, p + 10, a.data());
            fresh->read_k(0, 0, p, b.data());
            for (int64_t h = 0; h < s.n_head_kv[0]; ++h)
                for (int64_t i = 0; i < 8; ++i)
                    rope_dims_moved +=
                        a[size_t(h * s.head_dim_k + i)] != b[size_t(h * s.head_dim_k + i)];
        }
        std::printf(
            "[mla %s] layer-0 keys after the shift vs fresh: worst %.2f x 2^-11 of the row; "
            "%lld RoPE values differ from the unshifted keys\n",
            path == MlaPath::Absorbed ? "absorbed" : "naive", worst,
            static_cast<long long>(rope_dims_moved));
        EXPECT_LE(worst, 4.0);
        EXPECT_GT(rope_dims_moved, 0);
    }
}

// The deepseek2 fixture rewritten with one thing changed: `key` set to `value` (a u32; a key
// absent from the file is added), or, with drop_tensor, that tensor left out.
std::string load_error_of_variant(const std::string& key, std::optional<uint32_t> value,
                                  const std::string& drop_tensor = "") {
    const gguf::GgufFile f = gguf::GgufFile::open(test::fixtures_dir() / "arch_deepseek2.gguf");
    gguf::GgufWriter w;
    w.set_alignment(f.alignment());
    bool seen = false;
    for (const gguf::KeyValue& kv : f.metadata()) {
        if (kv.key == "general.alignment") continue;
        if (kv.key == key) {
            seen = true;
            if (value) w.add_u32(kv.key, *value);
            continue;
        }
        w.add(kv.key, kv.value);
    }
    if (!seen && value) w.add_u32(key, *value);
    for (const gguf::TensorInfo& t : f.tensors()) {
        if (t.name == drop_tensor) continue;
        std::vector<uint64_t> ne(t.ne.begin(), t.ne.begin() + t.n_dims);
        w.add_tensor(t.name, t.type, ne, f.tensor_data(t));
    }
    cpu::CpuBackend be(1);
    try {
        Model::load(gguf::GgufFile::parse(w.to_bytes(), "variant.gguf"), be);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

// A prefix cache saved on one path must not be restored on the other: its key says the cache's
// shape, not the file's head counts (the file says 1 KV head of 40 / 32 whichever path runs).
TEST(Mla, ThePrefixCacheKeyTellsThePathsApart) {
    cpu::CpuBackend be(1);
    const auto path = test::fixtures_dir() / "arch_deepseek2.gguf";
    std::string key[2];
    for (int i = 0; i < 2; ++i) {
        const auto model = load("deepseek2", be, i ? MlaPath::Naive : MlaPath::Absorbed);
        key[i] = prefix_cache_key(*model, path, KvTypes{}, "cpu").text();
    }
    EXPECT_NE(key[0].find("n_head_kv=1,1,1\nhead_dim_k=40\nhead_dim_v=32"), std::string::npos)
        << key[0];
    // ... and that its values are the keys' latent, not rows of their own.
    EXPECT_NE(key[0].find("v_in_k=8"), std::string::npos) << key[0];
    EXPECT_EQ(key[1].find("v_in_k"), std::string::npos) << key[1];
    EXPECT_NE(key[1].find("n_head_kv=4,4,4\nhead_dim_k=24\nhead_dim_v=16"), std::string::npos)
        << key[1];
}

// A prefix cache saved from the absorbed path holds each token's key row alone (the latent once:
// 3 layers x 40 f16 values, where storing the values too would take 72), and a conversation
// continued from it in a fresh cache gives a fresh prefill's logits bit for bit (a value read
// from anywhere but the restored keys' latent dims would change them).
TEST(Mla, TheAbsorbedPrefixCacheFileHoldsTheLatentOnce) {
    cpu::CpuBackend be(2);
    const auto model = load("deepseek2", be, MlaPath::Absorbed);
    const std::vector<int32_t> ids = fixture_ids("deepseek2");
    const std::vector<int32_t> first(ids.begin(), ids.begin() + 40);
    std::vector<int32_t> next = first;
    next.push_back(ids[45]);
    const PrefixCacheKey key{{{"model", "arch_deepseek2"}}};
    const auto file = test::unique_temp_path("mla_prefix.fpc");
    struct Rig {
        std::unique_ptr<KvCache> kv;
        std::unique_ptr<PrefixCache> cache;
        std::unique_ptr<Sequence> seq;
    };
    const auto rig = [&] {
        Rig r;
        KvShape ks;
        ks.n_ctx = 128;
        ks.n_seq = 3;
        ks.pool_tokens = 384;
        r.kv = model->create_kv(ks);
        EXPECT_TRUE(r.kv->shape().values_in_keys());
        r.cache = std::make_unique<PrefixCache>(dynamic_cast<PagedKvCache&>(*r.kv), 1, 2);
        r.seq = std::make_unique<Sequence>(*model, *r.kv, 0);
        r.seq->set_prefix_cache(r.cache.get());
        return r;
    };
    Rig a = rig();
    a.seq->prefill(first);
    a.seq->prefill(std::vector<int32_t>(ids.begin() + 50, ids.begin() + 60));  // stores `first`
    const PrefixCacheFileStats saved = save_prefix_cache(*a.cache, key, file, {});
    ASSERT_GE(saved.rows, 40);
    const uint64_t keys_only = uint64_t(saved.rows) * 3 * 40 * 2;
    EXPECT_GE(saved.file_bytes, keys_only);
    EXPECT_LT(saved.file_bytes, uint64_t(saved.rows) * 3 * 72 * 2);
    Rig b = rig();
    EXPECT_EQ(restore_prefix_cache(*b.cache, 0, key, file).entries, saved.entries);
    PrefillStats st;
    const auto ls = b.seq->prefill(next, &st);
    const std::vector<float> got(ls.begin(), ls.end());
    EXPECT_EQ(st.reused_tokens, 40);
    auto kv = model->create_kv(128, 1, KvType::F16);
    Sequence fresh(*model, *kv, 0);
    const auto want = fresh.prefill(next);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0);
}

// What a deepseek2 file must agree with is checked at load, naming the key or tensor.
TEST(Mla, InconsistentFilesAreRefusedNamingWhatIsWrong) {
    EXPECT_EQ(load_error_of_variant("deepseek2.block_count", 3), "");  // the rewrite itself loads
    const auto refused = [](const std::string& what, const std::string& needle) {
        EXPECT_NE(what.find(needle), std::string::npos) << "error: '" << what << "'";
    };
    // The MLA form's key_length must be the latent's (32) + the RoPE dims (8).
    refused(load_error_of_variant("deepseek2.attention.key_length", 24),
            "'deepseek2.attention.key_length'");
    refused(load_error_of_variant("deepseek2.attention.kv_lora_rank", std::nullopt),
            "'deepseek2.attention.kv_lora_rank'");
    refused(load_error_of_variant("deepseek2.expert_gating_func", 4),
            "'deepseek2.expert_gating_func' is 4");
    refused(load_error_of_variant("deepseek2.expert_group_count", 3),
            "'deepseek2.expert_group_count'");
    refused(load_error_of_variant("deepseek2.expert_group_used_count", 0),
            "'deepseek2.expert_group_used_count'");
    // A key this engine does not implement (DeepSeek-V3.2's per-group scale) is refused by name.
    refused(load_error_of_variant("deepseek2.expert_group_scale", 2),
            "'deepseek2.expert_group_scale' is not understood");
    refused(load_error_of_variant("", std::nullopt, "blk.1.attn_k_b.weight"),
            "'blk.1.attn_k_b.weight' is missing");
    // exp_probs_b is optional in a deepseek2 file; another architecture's file holding one is
    // refused as a tensor it never reads (ModelLoadChecks covers that rule).
    EXPECT_EQ(load_error_of_variant("", std::nullopt, "blk.1.exp_probs_b.bias"), "");
}

}  // namespace
}  // namespace fluoro
