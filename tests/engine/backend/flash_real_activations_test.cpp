// Flash vs standard attention on real SmolLM2 activations: a Backend decorator runs every layer's
// attention of a prefill and of decode steps both ways on the same q, K, V (an F32 cache, so the
// standard path's fp16 rounding of probabilities is out of the picture) and keeps the largest
// difference; the forward pass goes on with the standard output. Bound: 1e-5 absolute on outputs
// of magnitude <= 1, relative to the call's largest output above (Gemma's values reach ~10).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "decode/sequence.h"
#include "model/model.h"
#include "test_models.h"

namespace fluoro {
namespace {

class CompareAttention final : public Backend {
  public:
    explicit CompareAttention(cpu::CpuBackend& inner) : inner_(inner) {}
    double max_diff = 0;    // absolute
    double max_scaled = 0;  // absolute / max(1, largest |output| of the call)
    int64_t calls = 0;

    std::string_view name() const override { return inner_.name(); }
    Weight load_weight(const gguf::GgufFile& f, const gguf::TensorInfo& i) override {
        return inner_.load_weight(f, i);
    }
    std::unique_ptr<KvCache> create_kv(const KvShape& s) override { return inner_.create_kv(s); }
    void kv_compact(KvCache& kv, int64_t seq, std::span<const int64_t> keep) override {
        inner_.kv_compact(kv, seq, keep);
    }
    void kv_rope_shift(KvCache& kv, int64_t layer, int64_t seq, int64_t begin,
                       std::span<const int32_t> deltas, const RopeParams& p) override {
        inner_.kv_rope_shift(kv, layer, seq, begin, deltas, p);
    }
    Act alloc_act(int64_t r, int64_t w) override { return inner_.alloc_act(r, w); }
    void reserve(int64_t t, int64_t w) override { inner_.reserve(t, w); }
    void get_rows(const Weight& t, std::span<const int32_t> ids, Act y) override {
        inner_.get_rows(t, ids, y);
    }
    void matmul(const Weight& w, const Act& x, Act y, OpCategory c) override {
        inner_.matmul(w, x, y, c);
    }
    void add_bias(Act y, const Weight& b) override { inner_.add_bias(y, b); }
    void rms_norm(const Act& x, const Weight& w, float eps, Act y) override {
        inner_.rms_norm(x, w, eps, y);
    }
    void rope(Act x, int64_t nh, int64_t hd, const RopeParams& p,
              std::span<const int32_t> pos) override {
        inner_.rope(x, nh, hd, p, pos);
    }
    void attention(const AttentionParams& p, const Act& q, const Act& k, const Act& v,
                   const Batch& batch, KvCache& kv, Act out) override {
        flash_.resize(size_t(out.rows * out.width));
        inner_.set_attention_impl(AttentionImpl::Flash);
        inner_.attention(p, q, k, v, batch, kv, Act{flash_.data(), out.rows, out.width});
        inner_.set_attention_impl(AttentionImpl::Standard);
        inner_.attention(p, q, k, v, batch, kv, out);
        double diff = 0, mag = 1;
        for (int64_t i = 0; i < out.rows * out.width; ++i) {
            diff = std::max(diff, double(std::abs(out.data[i] - flash_[size_t(i)])));
            mag = std::max(mag, double(std::abs(out.data[i])));
        }
        max_diff = std::max(max_diff, diff);
        max_scaled = std::max(max_scaled, diff / mag);
        ++calls;
    }
    void set_attention_impl(AttentionImpl) override {}
    AttentionImpl attention_impl() const override { return AttentionImpl::Standard; }
    void set_attention_capture(AttentionCapture* c) override { inner_.set_attention_capture(c); }
    std::span<const float> attention_key_scores(int64_t l, int64_t h, int64_t s) const override {
        return inner_.attention_key_scores(l, h, s);
    }
    void add(Act x, const Act& y) override { inner_.add(x, y); }
    void scale(Act x, float s) override { inner_.scale(x, s); }
    void swiglu(Act g, const Act& u) override { inner_.swiglu(g, u); }
    void swiglu_oai(Act g, const Act& u, float a, float l) override {
        inner_.swiglu_oai(g, u, a, l);
    }
    void geglu_tanh(Act g, const Act& u) override { inner_.geglu_tanh(g, u); }
    void softcap(Act x, float cap) override { inner_.softcap(x, cap); }
    void gather_rows(const Act& x, std::span<const int32_t> r, Act y) override {
        inner_.gather_rows(x, r, y);
    }
    void copy_blocks(const Act& x, Act y, const BlockCopy& c) override {
        inner_.copy_blocks(x, y, c);
    }
    void read(const Act& x, std::span<float> host) override { inner_.read(x, host); }

  private:
    cpu::CpuBackend& inner_;
    std::vector<float> flash_;
};

void check(const std::filesystem::path& path) {
    cpu::CpuBackend cpu(2);
    CompareAttention be(cpu);
    ModelLoadOptions opt;
    opt.max_batch = 256;  // a 700-token prompt in 3 passes
    opt.max_logit_rows = 1;
    auto model = Model::load(path, be, opt);
    auto kv = model->create_kv(1024, 1, KvType::F32);
    Sequence seq(*model, *kv, 0);
    std::string text;
    for (int i = 0; i < 70; ++i) text += "Line " + std::to_string(i) + " of the harbour log. ";
    const std::vector<int32_t> prompt = model->tokenizer().encode(text, true, false);
    ASSERT_GT(prompt.size(), 600u);  // past the 512-key flash range
    seq.prefill(prompt);
    for (const int32_t t : model->tokenizer().encode(" and the ships came home", false, false))
        seq.decode(t);
    std::printf("[ flash vs standard ] %s: %lld attention calls, max abs diff %.3g, scaled %.3g\n",
                path.filename().c_str(), static_cast<long long>(be.calls), be.max_diff,
                be.max_scaled);
    EXPECT_GT(be.calls, 0);
    EXPECT_LE(be.max_scaled, 1e-5);
}

TEST(FlashRealActivations, SmolLM2FlashEqualsStandard) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    check(path);
}

TEST(FlashRealActivations, Gemma3FlashEqualsStandard) {
    FLUORO_REQUIRE_MODEL(path, test::kGemma3File);
    check(path);
}

}  // namespace
}  // namespace fluoro
