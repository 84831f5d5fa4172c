// Backend::add_rows_scaled (the mixture-of-experts combine): the CPU backend's own loop and the
// seam's default (a scale() and an add() per row, what the CUDA backend runs) against the
// definition x[rows[i]] += scales[i] * y[i], and its refusals.
#include <gtest/gtest.h>

#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"

namespace fluoro {
namespace {

// The CPU backend with add_rows_scaled left to Backend's default: every other call forwarded.
class DefaultCombine final : public Backend {
  public:
    std::string_view name() const override { return "default-combine"; }
    Weight load_weight(const gguf::GgufFile& f, const gguf::TensorInfo& i) override {
        return cpu_.load_weight(f, i);
    }
    std::unique_ptr<KvCache> create_kv(const KvShape& s) override { return cpu_.create_kv(s); }
    void kv_compact(KvCache& kv, int64_t seq, std::span<const int64_t> keep) override {
        cpu_.kv_compact(kv, seq, keep);
    }
    void kv_rope_shift(KvCache& kv, int64_t layer, int64_t seq, int64_t begin,
                       std::span<const int32_t> deltas, const RopeParams& p) override {
        cpu_.kv_rope_shift(kv, layer, seq, begin, deltas, p);
    }
    Act alloc_act(int64_t r, int64_t w) override { return cpu_.alloc_act(r, w); }
    void reserve(int64_t t, int64_t w) override { cpu_.reserve(t, w); }
    void get_rows(const Weight& t, std::span<const int32_t> ids, Act y) override {
        cpu_.get_rows(t, ids, y);
    }
    void matmul(const Weight& w, const Act& x, Act y, OpCategory c) override {
        cpu_.matmul(w, x, y, c);
    }
    void add_bias(Act y, const Weight& b) override { cpu_.add_bias(y, b); }
    void rms_norm(const Act& x, const Weight& w, float eps, Act y) override {
        cpu_.rms_norm(x, w, eps, y);
    }
    void rope(Act x, int64_t nh, int64_t hd, const RopeParams& p,
              std::span<const int32_t> pos) override {
        cpu_.rope(x, nh, hd, p, pos);
    }
    void attention(const AttentionParams& p, const Act& q, const Act& k, const Act& v,
                   const Batch& batch, KvCache& kv, Act out) override {
        cpu_.attention(p, q, k, v, batch, kv, out);
    }
    void set_attention_impl(AttentionImpl i) override { cpu_.set_attention_impl(i); }
    AttentionImpl attention_impl() const override { return cpu_.attention_impl(); }
    void set_attention_capture(AttentionCapture* c) override { cpu_.set_attention_capture(c); }
    std::span<const float> attention_key_scores(int64_t l, int64_t h, int64_t s) const override {
        return cpu_.attention_key_scores(l, h, s);
    }
    void add(Act x, const Act& y) override { cpu_.add(x, y); }
    void scale(Act x, float s) override { cpu_.scale(x, s); }
    void swiglu(Act g, const Act& u) override { cpu_.swiglu(g, u); }
    void swiglu_oai(Act g, const Act& u, float a, float l) override { cpu_.swiglu_oai(g, u, a, l); }
    void geglu_tanh(Act g, const Act& u) override { cpu_.geglu_tanh(g, u); }
    void softcap(Act x, float cap) override { cpu_.softcap(x, cap); }
    void gather_rows(const Act& x, std::span<const int32_t> r, Act y) override {
        cpu_.gather_rows(x, r, y);
    }
    void copy_blocks(const Act& x, Act y, const BlockCopy& c) override {
        cpu_.copy_blocks(x, y, c);
    }
    void read(const Act& x, std::span<float> host) override { cpu_.read(x, host); }

  private:
    cpu::CpuBackend cpu_{2};
};

void check(Backend& be) {
    const int64_t w = 37;  // not a multiple of any vector width
    std::vector<float> x(size_t(5 * w)), y(size_t(3 * w));
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 11) - 5.0f;
    for (size_t i = 0; i < y.size(); ++i) y[i] = 0.25f * float(i % 7) - 0.5f;
    std::vector<float> want = x;
    const std::vector<int32_t> rows{4, 0, 2};
    const std::vector<float> scales{0.5f, -2.0f, 0.125f};
    for (size_t i = 0; i < rows.size(); ++i)
        for (int64_t j = 0; j < w; ++j)
            want[size_t(rows[i] * w + j)] += scales[i] * y[i * size_t(w) + size_t(j)];
    be.add_rows_scaled(Act{x.data(), 5, w}, Act{y.data(), 3, w}, rows, scales);
    for (size_t i = 0; i < x.size(); ++i) EXPECT_FLOAT_EQ(x[i], want[i]) << be.name() << " " << i;
    const std::vector<int32_t> outside{4, 5, 0};
    EXPECT_THROW(be.add_rows_scaled(Act{x.data(), 5, w}, Act{y.data(), 3, w}, outside, scales),
                 Error);
    EXPECT_THROW(be.add_rows_scaled(Act{x.data(), 5, w}, Act{y.data(), 2, w}, rows, scales), Error);
}

TEST(AddRowsScaled, CpuBackend) {
    cpu::CpuBackend be(2);
    check(be);
}

TEST(AddRowsScaled, BackendDefault) {
    DefaultCombine be;
    check(be);
}

}  // namespace
}  // namespace fluoro
