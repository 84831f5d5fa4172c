// CPU attention (backend/cpu/cpu_attention.h), standard and flash, against a float64 reference:
// output, each row's log-sum-exp, the probabilities attention_readout.h recomputes for capture and
// its sparsity readout. GQA groups, sliding windows, soft-capping, large logit scales, lengths on
// both sides of the flash tile, batches of tokens at scattered positions in two sequences, 1-3
// threads (a single decode token is split into key ranges whose partial softmaxes are merged), F16
// and F32 caches, and caches that hand out their rows in runs of 1, 3 or all (the paged cache of a
// later issue gives short runs), and attention sinks (gpt-oss: a logit per head in every
// denominator, AttentionParams::sinks).
#include "backend/cpu/cpu_attention.h"

#include <gtest/gtest.h>

#include <functional>

#include "backend/cpu/attention_readout.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/backend/kernel_test_support.h"
#include "engine/backend/run_limited_kv.h"
#include "kv/contiguous_kv.h"
#include "tensor/fp16.h"

namespace fluoro::cpu {
namespace {

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
    float q_amp = 2.0f;  // queries uniform in [-q_amp, q_amp]: the logit scale
    int64_t n_ctx = 700;
    float sink_amp = 0;  // > 0: a sink logit per head, N(0, sink_amp^2); 0: no sinks
};

float stored(KvType type, float x) {
    return type == KvType::F16 ? fp16_to_fp32(fp32_to_fp16(x)) : x;
}

// Sparsity of a row of float64 probabilities, as attention_readout.h defines it.
HeadSparsity reference_sparsity(const std::vector<double>& p, int64_t first, int32_t top_k,
                                float threshold) {
    HeadSparsity h;
    double entropy = 0, below = 0, sink = 0;
    for (size_t j = 0; j < p.size(); ++j) {
        if (p[j] > 0) entropy -= p[j] * std::log(p[j]);
        below += p[j] < threshold;
        if (first + int64_t(j) < 4) sink += p[j];
    }
    std::vector<double> sorted = p;
    std::sort(sorted.begin(), sorted.end(), std::greater<>());
    double top = 0;
    for (size_t i = 0; i < std::min(sorted.size(), size_t(top_k)); ++i) top += sorted[i];
    h.entropy = float(entropy);
    h.top_k_mass = float(top);
    h.below_threshold = float(below / double(p.size()));
    h.sink_mass = float(sink);
    return h;
}

class CpuAttentionTest : public ::testing::TestWithParam<Case> {};

TEST_P(CpuAttentionTest, MatchesFloat64Reference) {
    const Case& c = GetParam();
    std::mt19937 rng(7);
    const int64_t n_ctx = c.n_ctx, layer = 1, n_tok = int64_t(c.positions.size());
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
    std::vector<float> sink_logits;
    Weight sinks;
    if (c.sink_amp > 0) {
        for (int64_t h = 0; h < c.n_head; ++h)
            sink_logits.push_back(std::normal_distribution<float>(0, c.sink_amp)(rng));
        sinks.name = "sinks";
        sinks.ne = {c.n_head, 1, 1, 1};
        sinks.data = sink_logits.data();
        sinks.row_bytes = sink_logits.size() * sizeof(float);
        p.sinks = &sinks;
    }

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
    std::vector<float> q = test::random_floats(n_tok * c.n_head * d, rng, c.q_amp);
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

    for (const AttentionImpl impl : {AttentionImpl::Standard, AttentionImpl::Flash}) {
        SCOPED_TRACE(std::string(attention_impl_name(impl)));
        AttentionScratch scratch;
        std::vector<float> out(size_t(n_tok * c.n_head * d), -7.0f);
        const Act qa{q.data(), n_tok, c.n_head * d};
        attend(pool, p, qa, batch, kv, Act{out.data(), n_tok, c.n_head * d}, scratch,
               {impl, n_tok - 1});
        // Capture every head's rows, and the sparsity of the last token.
        AttentionCapture capture;
        capture.regions.push_back({5, -1, -1, 0, 0, 0});
        capture.stats = true;
        capture.top_k = 3;
        capture.threshold = 2e-3f;
        capture_rows(p, qa, batch, kv, scratch, capture);
        KeyScores key_scores;
        compute_sparsity(pool, p, batch, kv.shape(), scratch, capture, key_scores);
        ASSERT_EQ(capture.rows.size(), size_t(n_tok * c.n_head));
        ASSERT_EQ(capture.sparsity.size(), 1u);

        for (int64_t t = 0; t < n_tok; ++t) {
            const int64_t pos = c.positions[size_t(t)], s = c.seqs[size_t(t)];
            const int64_t lo = c.window > 0 ? std::max<int64_t>(0, pos - c.window + 1) : 0;
            for (int64_t h = 0; h < c.n_head; ++h) {
                const int64_t kvh = h / group;
                std::vector<double> w;
                double abs_logit = 0;  // the largest sum of |q_i k_i| * scale over the keys
                for (int64_t j = lo; j <= pos; ++j) {
                    double dot = 0, abs_dot = 0;
                    for (int64_t i = 0; i < d; ++i) {
                        const double prod =
                            double(stored(c.type, q[size_t((t * c.n_head + h) * d + i)])) *
                            stored(c.type,
                                   cache_k[size_t((s * n_ctx + j) * kv_width + kvh * d + i)]);
                        dot += prod;
                        abs_dot += std::abs(prod);
                    }
                    abs_logit = std::max(abs_logit, abs_dot * p.scale);
                    double x = dot * p.scale;
                    if (c.softcap > 0) x = c.softcap * std::tanh(x / c.softcap);
                    w.push_back(x);
                }
                // A sink joins the denominator (and the max) with no value of its own.
                const double sink = c.sink_amp > 0 ? double(sink_logits[size_t(h)])
                                                   : -std::numeric_limits<double>::infinity();
                const double m = std::max(*std::max_element(w.begin(), w.end()), sink);
                double sum = std::exp(sink - m);
                for (double& x : w) sum += (x = std::exp(x - m));
                ASSERT_NEAR(scratch.lse[size_t(t * c.n_head + h)], m + std::log(sum),
                            1e-5 * std::max(1.0, std::abs(m)))
                    << "log-sum-exp, token " << t << " head " << h;
                // The captured row: keys 0..pos, zero before the window.
                const CapturedAttentionRow& row = capture.rows[size_t(t * c.n_head + h)];
                ASSERT_EQ(row.id, 5);
                ASSERT_EQ(row.pos, pos);
                ASSERT_EQ(row.head, h);
                ASSERT_EQ(row.weights.size(), size_t(pos + 1));
                for (int64_t j = 0; j <= pos; ++j) {
                    const double ref = j < lo ? 0.0 : w[size_t(j - lo)] / sum;
                    ASSERT_NEAR(row.weights[size_t(j)], ref, 1e-5)
                        << "captured token " << t << " head " << h << " key " << j;
                }
                if (t == n_tok - 1) {
                    std::vector<double> probs;
                    for (const double x : w) probs.push_back(x / sum);
                    const HeadSparsity want = reference_sparsity(probs, lo, 3, 2e-3f);
                    const HeadSparsity got = capture.sparsity[0].heads[size_t(h)];
                    EXPECT_NEAR(got.entropy, want.entropy, 1e-4) << "head " << h;
                    EXPECT_NEAR(got.top_k_mass, want.top_k_mass, 1e-5) << "head " << h;
                    EXPECT_NEAR(got.below_threshold, want.below_threshold, 1.5 / double(w.size()));
                    EXPECT_NEAR(got.sink_mass, want.sink_mass, 1e-5) << "head " << h;
                    if (h % group == group - 1) {  // H2O: the group's probabilities, summed
                        const std::span<const float> acc = key_scores.get(layer, kvh, s);
                        ASSERT_EQ(acc.size(), size_t(n_ctx));
                        for (int64_t j = lo; j <= pos; ++j) {
                            double sum_group = 0;
                            for (int64_t g = 0; g < group; ++g)
                                sum_group += capture.rows[size_t(t * c.n_head + kvh * group + g)]
                                                 .weights[size_t(j)];
                            ASSERT_NEAR(acc[size_t(j)], sum_group, 1e-5) << "key " << j;
                        }
                    }
                }
                for (int64_t i = 0; i < d; ++i) {
                    double ref = 0, mag = 0;
                    for (int64_t j = lo; j <= pos; ++j) {
                        const double prod =
                            w[size_t(j - lo)] / sum *
                            stored(c.type,
                                   cache_v[size_t((s * n_ctx + j) * kv_width + kvh * d + i)]);
                        ref += prod;
                        mag += std::abs(prod);
                    }
                    // F16, standard: the probabilities are rounded to fp16 (2^-11 relative) before
                    // p·V. Flash never rounds them. A float logit is off by about
                    // sqrt(d) * 2^-24 * sum|q_i k_i| * scale, and a probability by that relative
                    // (twice: numerator and sum), which matters only for the large-logit shapes
                    // (1.4e-5 relative there on an AVX2-only machine, against 1.35e-5 allowed
                    // before this term).
                    const bool rounded = c.type == KvType::F16 && impl == AttentionImpl::Standard;
                    const double logit_err =
                        2.0 * std::sqrt(double(d)) * std::ldexp(1.0, -24) * abs_logit;
                    const double tol = ((rounded ? 1e-3 : 1e-5) + logit_err) * mag + 1e-6;
                    ASSERT_NEAR(out[size_t((t * c.n_head + h) * d + i)], ref, tol)
                        << "token " << t << " head " << h << " dim " << i;
                }
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
        // 128 heads x 651 keys, and below 9 x 651: readouts in a pool region and serial.
        out.push_back(
            {"many_heads_parallel_readout_" + tn, 128, 4, 32, 0, 0, type, 2, 0, decode, {0}});
        // 2501 keys: 40 blocks of 64 for the top-k bound, with a GQA group of 3 and of 8.
        Case long_serial{"long_row_readout_" + tn, 9, 3, 64, 0, 0, type, 2, 0, {2500}, {1}};
        long_serial.n_ctx = 2600;
        out.push_back(long_serial);
        Case long_parallel = long_serial;
        long_parallel.name = "long_row_group8_readout_" + tn;
        long_parallel.n_head = 32;
        long_parallel.n_head_kv = 4;
        long_parallel.head_dim = 32;
        out.push_back(long_parallel);
        out.push_back(
            {"group6_window_" + tn, 12, 2, 32, 100, 0, type, 2, 0, prefill, prefill_seqs});
        out.push_back({"runs_of_1_" + tn, 4, 1, 64, 0, 0, type, 2, 1, decode, {0}});
        out.push_back({"runs_of_3_" + tn, 9, 3, 64, 0, 0, type, 3, 3, prefill, prefill_seqs});
        out.push_back({"mqa_decode_" + tn, 8, 1, 16, 0, 0, type, 2, 0, {5}, {0}});
        // Lengths around the flash tile (256 keys) and range (512 keys), length 1, large logits.
        for (const int32_t pos : {0, 126, 254, 255, 256, 510, 511, 512, 699})
            out.push_back({"tile_edge_" + std::to_string(pos + 1) + "_" + tn,
                           6,
                           3,
                           24,
                           0,
                           0,
                           type,
                           1,
                           0,
                           {pos},
                           {0}});
        out.push_back({"tile_edges_prefill_" + tn,
                       4,
                       2,
                       32,
                       0,
                       0,
                       type,
                       2,
                       0,
                       {0, 255, 256, 257, 511, 512, 513, 699},
                       {0, 0, 0, 0, 0, 0, 0, 0}});
        out.push_back(
            {"large_logits_" + tn, 9, 3, 64, 0, 0, type, 2, 0, prefill, prefill_seqs, 40.0f});
        out.push_back({"large_logits_window_softcap_" + tn,
                       4,
                       1,
                       256,
                       300,
                       30.0f,
                       type,
                       3,
                       0,
                       decode,
                       {0},
                       40.0f});
        out.push_back({"window_1_" + tn, 4, 2, 32, 1, 0, type, 2, 0, prefill, prefill_seqs});
        // Sinks (gpt-oss): N(0, 3^2) logits, so some heads give most of their mass to the sink
        // and some almost none; on a decode split over 3 threads (merged partials), a windowed
        // prefill in two sequences, and with large logits.
        Case sinks_decode{"sinks_decode_" + tn, 9, 3, 64, 0, 0, type, 3, 0, decode, {0}};
        sinks_decode.sink_amp = 3.0f;
        out.push_back(sinks_decode);
        Case sinks_window{
            "sinks_window_prefill_" + tn, 8, 2, 32, 100, 0, type, 2, 0, prefill, prefill_seqs};
        sinks_window.sink_amp = 3.0f;
        out.push_back(sinks_window);
        Case sinks_large{
            "sinks_large_logits_" + tn, 4, 2, 32, 0, 0, type, 2, 0, prefill, prefill_seqs, 40.0f};
        sinks_large.sink_amp = 3.0f;
        out.push_back(sinks_large);
    }
    return out;
}

// Flash rows do not depend on the batch they are computed in (speculative verification must
// reproduce decode bit for bit): a token decoded alone (its keys split across threads) equals the
// same token as the last row of batches of 2..8, at contexts across the 512-key range size.
TEST(CpuFlashAttention, RowsAreBatchInvariantBitForBit) {
    std::mt19937 rng(11);
    const int64_t n_ctx = 1500, d = 64, n_head = 9, n_head_kv = 3, kv_width = n_head_kv * d;
    KvShape shape;
    shape.n_layer = 1;
    shape.n_head_kv = {n_head_kv};
    shape.head_dim_k = shape.head_dim_v = d;
    shape.type = KvType::F16;
    shape.n_ctx = n_ctx;
    ContiguousKvCache kv(shape);
    ThreadPool pool(2);
    AttentionParams p;
    p.n_head = n_head;
    p.n_head_kv = n_head_kv;
    p.head_dim_k = p.head_dim_v = d;
    p.scale = 0.125f;
    std::vector<float> k = test::random_floats(n_ctx * kv_width, rng);
    std::vector<float> v = test::random_floats(n_ctx * kv_width, rng);
    std::vector<int32_t> pos(static_cast<size_t>(n_ctx)), seq(size_t(n_ctx), 0),
        tok(size_t(n_ctx), 0);
    for (int32_t i = 0; i < int32_t(n_ctx); ++i) pos[size_t(i)] = i;
    store_kv(pool, p, Act{k.data(), n_ctx, kv_width}, Act{v.data(), n_ctx, kv_width},
             Batch{tok, pos, seq, {}}, kv);
    std::vector<float> q = test::random_floats(8 * n_head * d, rng, 2.0f);
    for (const int64_t last : {300, 511, 512, 1023, 1499}) {
        AttentionScratch scratch;
        std::vector<float> alone(size_t(n_head * d));
        const auto batch_of = [&](int64_t n) {
            return Batch{std::span(tok).first(size_t(n)),
                         std::span<const int32_t>(pos).subspan(size_t(last - n + 1), size_t(n)),
                         std::span(seq).first(size_t(n)),
                         {}};
        };
        attend(pool, p, Act{q.data() + 7 * n_head * d, 1, n_head * d}, batch_of(1), kv,
               Act{alone.data(), 1, n_head * d}, scratch, {AttentionImpl::Flash, -1});
        for (int64_t n = 2; n <= 8; ++n) {
            std::vector<float> out(size_t(n * n_head * d));
            attend(pool, p, Act{q.data() + (8 - n) * n_head * d, n, n_head * d}, batch_of(n), kv,
                   Act{out.data(), n, n_head * d}, scratch, {AttentionImpl::Flash, -1});
            EXPECT_EQ(0, std::memcmp(out.data() + (n - 1) * n_head * d, alone.data(),
                                     alone.size() * sizeof(float)))
                << "position " << last << ", batch of " << n;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, CpuAttentionTest, ::testing::ValuesIn(cases()),
                         [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace fluoro::cpu
