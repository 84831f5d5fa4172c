#include "measure/attn_calibration.h"

#include <algorithm>
#include <charconv>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "eval/perplexity.h"
#include "gguf/gguf_file.h"
#include "measure/eval_text.h"
#include "model/hparams.h"
#include "model/model.h"

namespace fluoro::app {
namespace {

// The layer of "blk.N.attn_norm.weight", or -1.
int64_t attn_norm_layer(std::string_view name) {
    constexpr std::string_view head = "blk.", tail = ".attn_norm.weight";
    if (!name.starts_with(head) || !name.ends_with(tail)) return -1;
    const std::string_view n = name.substr(head.size(), name.size() - head.size() - tail.size());
    int64_t layer = -1;
    const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), layer);
    return ec == std::errc() && end == n.data() + n.size() ? layer : -1;
}

// The CPU backend, reading the attention norm's output rows into each layer's Gram of [x, 1].
class GramBackend final : public cpu::CpuBackend {
  public:
    GramBackend(int threads, int64_t n_layer, int64_t n_embd)
        : cpu::CpuBackend(threads), d_(n_embd) {
        sums_.assign(size_t(n_layer), std::vector<double>(size_t((d_ + 1) * (d_ + 1)), 0.0));
        rows_.assign(size_t(n_layer), 0);
    }
    void rms_norm(const Act& x, const Weight& w, float eps, Act y) override {
        cpu::CpuBackend::rms_norm(x, w, eps, y);
        take(w, y);
    }
    void add_rms_norm(Act x, const Act& y, const Weight& w, float eps, Act out) override {
        cpu::CpuBackend::add_rms_norm(x, y, w, eps, out);
        take(w, out);
    }
    AttnInputGram gram() const {
        AttnInputGram g;
        g.n_embd = d_;
        g.tokens = rows_.empty() ? 0 : rows_[0];
        const int64_t w = d_ + 1;
        for (size_t il = 0; il < sums_.size(); ++il) {
            if (rows_[il] == 0)
                throw UnsupportedError("calibration: layer " + std::to_string(il) +
                                       " never computed blk." + std::to_string(il) +
                                       ".attn_norm.weight (an architecture without it)");
            std::vector<double> c = sums_[il];
            for (int64_t i = 0; i < w; ++i)  // lower triangle summed: mirror, then average
                for (int64_t j = 0; j <= i; ++j)
                    c[size_t(j * w + i)] = c[size_t(i * w + j)] /= double(rows_[il]);
            g.layers.push_back(std::move(c));
        }
        return g;
    }

  private:
    void take(const Weight& w, const Act& out) {
        const int64_t il = attn_norm_layer(w.name);
        if (il < 0 || il >= int64_t(sums_.size()) || out.width != d_) return;
        std::vector<double>& s = sums_[size_t(il)];
        const int64_t n = d_ + 1;
        for (int64_t r = 0; r < out.rows; ++r) {
            const float* x = out.data + r * out.width;
            for (int64_t i = 0; i < d_; ++i) {
                const double xi = x[i];
                double* row = s.data() + i * n;
                for (int64_t j = 0; j <= i; ++j) row[j] += xi * double(x[j]);
            }
            double* last = s.data() + d_ * n;  // the constant 1: the mean of x, and the count
            for (int64_t j = 0; j < d_; ++j) last[j] += double(x[j]);
            last[d_] += 1.0;
        }
        rows_[size_t(il)] += out.rows;
    }
    int64_t d_;
    std::vector<std::vector<double>> sums_;  // lower triangles of sum [x, 1]ᵀ[x, 1]
    std::vector<int64_t> rows_;
};

}  // namespace

AttnCalibration calibrate_attn_inputs(const std::filesystem::path& model_path,
                                      const AttnCalibrationOptions& opt) {
    gguf::GgufFile file = gguf::GgufFile::open(model_path);
    const Hparams hp = read_hparams(file);
    const int64_t chunk = opt.chunk;
    GramBackend be(opt.threads, int64_t(hp.n_layer), int64_t(hp.n_embd));
    ModelLoadOptions lo;
    lo.max_batch = chunk;
    lo.max_logit_rows = chunk;
    const std::unique_ptr<Model> model = Model::load(std::move(file), be, lo);
    std::vector<int32_t> tokens = eval_text_tokens(*model, read_eval_text(opt.text));
    const int64_t total = int64_t(tokens.size());
    tokens.erase(tokens.begin(), tokens.begin() + std::min(total, std::max<int64_t>(opt.skip, 0)));
    if (opt.tokens > 0 && int64_t(tokens.size()) > opt.tokens) tokens.resize(size_t(opt.tokens));
    if (chunk < 2 || int64_t(tokens.size()) < chunk)
        throw Error("calibration: " + eval_text_name(opt.text) + " has " + std::to_string(total) +
                    " tokens, fewer than one chunk of " + std::to_string(chunk) + " after the " +
                    std::to_string(opt.skip) + " skipped");
    const auto kv = model->create_kv(chunk, 1, KvType::F32);
    PerplexityOptions po;
    po.n_ctx = chunk;
    AttnCalibration c;
    c.ppl = perplexity(*model, *kv, tokens, po).ppl;
    c.gram = be.gram();
    return c;
}

}  // namespace fluoro::app
