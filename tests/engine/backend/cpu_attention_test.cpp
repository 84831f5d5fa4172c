// CPU attention (backend/cpu/cpu_attention.h) against a float64 reference: GQA groups, sliding
// windows, soft-capping, batches of tokens at scattered positions in two sequences, 1-3 threads
// (a single decode token is split into key ranges whose partial softmaxes are merged), F16 and
// F32 caches, and caches that hand out their rows in runs of 1, 3 or all (the paged cache of a
// later issue gives short runs).
#include "backend/cpu/cpu_attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/backend/kernel_test_support.h"
#include "kv/contiguous_kv.h"
#include "tensor/fp16.h"

namespace fluoro::cpu {
namespace {

// A contiguous cache that reports runs of at most max_run rows (0: as long as asked).
class RunLimitedKv final : public KvCache {
  public:
    RunLimitedKv(const KvShape& shape, int64_t max_run)
        : KvCache(shape), inner_(shape), max_run_(max_run) {}
    int64_t length(int64_t seq) const override { return inner_.length(seq); }
    void set_length(int64_t seq, int64_t n) override { inner_.set_length(seq, n); }
    int64_t capacity(int64_t seq) const override { return inner_.capacity(seq); }
    void* k_row(int64_t l, int64_t s, int64_t p) override { return inner_.k_row(l, s, p); }
    void* v_row(int64_t l, int64_t s, int64_t p) override { return inner_.v_row(l, s, p); }
    Run k_run(int64_t l, int64_t s, int64_t p, int64_t n) const override {
        return limit(inner_.k_run(l, s, p, n));
    }
    Run v_run(int64_t l, int64_t s, int64_t p, int64_t n) const override {
        return limit(inner_.v_run(l, s, p, n));
    }
    size_t bytes_allocated() const override { return inner_.bytes_allocated(); }

  private:
    Run limit(Run r) const {
        if (max_run_ > 0) r.rows = std::min(r.rows, max_run_);
        return r;
    }
    ContiguousKvCache inner_;
    int64_t max_run_;
};

struct Case {
    std::string name;
    int64_t n_head, n_head_kv, head_dim;
    int64_t window;
    float softcap;
    KvType type;
    int threads;
    int64_t max_run;  // 0 = whole runs
    std::vector<int32_t> positions;
    std::vector<int32_t> seqs;
};

float stored(KvType type, float x) {
    return type == KvType::F16 ? fp16_to_fp32(fp32_to_fp16(x)) : x;
}

class CpuAttentionTest : public ::testing::TestWithParam<Case> {};

TEST_P(CpuAttentionTest, MatchesFloat64Reference) {
    const Case& c = GetParam();
    std::mt19937 rng(7);
    const int64_t n_ctx = 700, layer = 1, n_tok = int64_t(c.positions.size());
    const int64_t d = c.head_dim, group = c.n_head / c.n_head_kv;
    KvShape shape;
    shape.n_layer = 2;
    shape.n_head_kv = {c.n_head_kv, c.n_head_kv};
    shape.head_dim_k = shape.head_dim_v = d;
    shape.type = c.type;
    shape.n_seq = 2;
    shape.n_ctx = n_ctx;
    RunLimitedKv kv(shape, c.max_run);
    ThreadPool pool(c.threads);
    AttentionParams p;
    p.layer = layer;
    p.n_head = c.n_head;
    p.n_head_kv = c.n_head_kv;
    p.head_dim_k = p.head_dim_v = d;
    p.scale = 1.0f / std::sqrt(float(d));
    p.window = c.window;
    p.softcap = c.softcap;

    // Fill every cache row of both sequences with random K/V (what earlier steps stored), then
    // store this batch's rows over their positions.
    const int64_t kv_width = c.n_head_kv * d;
    std::vector<float> cache_k(size_t(2 * n_ctx * kv_width)), cache_v(cache_k.size());
    for (float& x : cache_k) x = std::normal_distribution<float>(0, 1)(rng);
    for (float& x : cache_v) x = std::normal_distribution<float>(0, 1)(rng);
    {
        std::vector<int32_t> pos(static_cast<size_t>(n_ctx)), tok(size_t(n_ctx), 0);
        for (int32_t s = 0; s < 2; ++s) {
            std::vector<int32_t> seq(size_t(n_ctx), s);
            for (int32_t i = 0; i < n_ctx; ++i) pos[size_t(i)] = i;
            const Batch all{tok, pos, seq, {}};
            Act k{cache_k.data() + s * n_ctx * kv_width, n_ctx, kv_width};
            Act v{cache_v.data() + s * n_ctx * kv_width, n_ctx, kv_width};
            store_kv(pool, p, k, v, all, kv);
        }
    }
    std::vector<float> q = test::random_floats(n_tok * c.n_head * d, rng, 2.0f);
    std::vector<float> bk = test::random_floats(n_tok * kv_width, rng);
    std::vector<float> bv = test::random_floats(n_tok * kv_width, rng);
    for (int64_t t = 0; t < n_tok; ++t) {
        const size_t at = size_t((c.seqs[size_t(t)] * n_ctx + c.positions[size_t(t)]) * kv_width);
        std::copy_n(bk.data() + t * kv_width, kv_width, cache_k.data() + at);
        std::copy_n(bv.data() + t * kv_width, kv_width, cache_v.data() + at);
    }
    std::vector<int32_t> tokens(size_t(n_tok), 0);
    const Batch batch{tokens, c.positions, c.seqs, {}};
    store_kv(pool, p, Act{bk.data(), n_tok, kv_width}, Act{bv.data(), n_tok, kv_width}, batch, kv);

    AttentionScratch scratch;
    std::vector<float> out(size_t(n_tok * c.n_head * d), -7.0f);
    attend(pool, p, Act{q.data(), n_tok, c.n_head * d}, batch, kv,
           Act{out.data(), n_tok, c.n_head * d}, scratch);

    for (int64_t t = 0; t < n_tok; ++t) {
        const int64_t pos = c.positions[size_t(t)], s = c.seqs[size_t(t)];
        const int64_t lo = c.window > 0 ? std::max<int64_t>(0, pos - c.window + 1) : 0;
        for (int64_t h = 0; h < c.n_head; ++h) {
            const int64_t kvh = h / group;
            std::vector<double> w;
            for (int64_t j = lo; j <= pos; ++j) {
                double dot = 0;
                for (int64_t i = 0; i < d; ++i)
                    dot +=
                        double(stored(c.type, q[size_t((t * c.n_head + h) * d + i)])) *
                        stored(c.type, cache_k[size_t((s * n_ctx + j) * kv_width + kvh * d + i)]);
                double x = dot * p.scale;
                if (c.softcap > 0) x = c.softcap * std::tanh(x / c.softcap);
                w.push_back(x);
            }
            const double m = *std::max_element(w.begin(), w.end());
            double sum = 0;
            for (double& x : w) sum += (x = std::exp(x - m));
            for (int64_t i = 0; i < d; ++i) {
                double ref = 0, mag = 0;
                for (int64_t j = lo; j <= pos; ++j) {
                    const double prod =
                        w[size_t(j - lo)] / sum *
                        stored(c.type, cache_v[size_t((s * n_ctx + j) * kv_width + kvh * d + i)]);
                    ref += prod;
                    mag += std::abs(prod);
                }
                // F16: the probabilities are rounded to fp16 (2^-11 relative) before p·V.
                const double tol = (c.type == KvType::F16 ? 1e-3 : 1e-5) * mag + 1e-6;
                ASSERT_NEAR(out[size_t((t * c.n_head + h) * d + i)], ref, tol)
                    << "token " << t << " head " << h << " dim " << i;
            }
        }
    }
}

std::vector<Case> cases() {
    std::vector<Case> out;
    const std::vector<int32_t> decode = {650};
    const std::vector<int32_t> prefill = {0, 1, 2, 3, 63, 64, 65, 200, 201, 202, 640, 699};
    const std::vector<int32_t> prefill_seqs = {0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1};
    for (KvType type : {KvType::F16, KvType::F32}) {
        const std::string tn = type == KvType::F16 ? "f16" : "f32";
        for (int threads : {1, 2, 3}) {
            const std::string th = "_t" + std::to_string(threads);
            // SmolLM2-like (9 heads, 3 KV heads, 64 dims) and Gemma-3-like (4:1, 256 dims).
            out.push_back(
                {"smollm_decode_" + tn + th, 9, 3, 64, 0, 0, type, threads, 0, decode, {0}});
            out.push_back(
                {"gemma_decode_" + tn + th, 4, 1, 256, 0, 0, type, threads, 0, decode, {1}});
            out.push_back({"gemma_window_decode_" + tn + th,
                           4,
                           1,
                           256,
                           512,
                           0,
                           type,
                           threads,
                           0,
                           decode,
                           {0}});
            out.push_back({"smollm_prefill_" + tn + th, 9, 3, 64, 0, 0, type, threads, 0, prefill,
                           prefill_seqs});
        }
        out.push_back({"odd_dims_softcap_" + tn, 6, 2, 40, 0, 50.0f, type, 2, 0, decode, {0}});
        out.push_back(
            {"group6_window_" + tn, 12, 2, 32, 100, 0, type, 2, 0, prefill, prefill_seqs});
        out.push_back({"runs_of_1_" + tn, 4, 1, 64, 0, 0, type, 2, 1, decode, {0}});
        out.push_back({"runs_of_3_" + tn, 9, 3, 64, 0, 0, type, 3, 3, prefill, prefill_seqs});
        out.push_back({"mqa_decode_" + tn, 8, 1, 16, 0, 0, type, 2, 0, {5}, {0}});
    }
    return out;
}

INSTANTIATE_TEST_SUITE_P(Shapes, CpuAttentionTest, ::testing::ValuesIn(cases()),
                         [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace fluoro::cpu
