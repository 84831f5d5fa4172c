// What the llama.cpp fixture tests (arch_llamacpp_test, quant_types_llamacpp_test) share: a
// sequence fed through the model in chunks of `chunk` tokens (as llama.cpp's fixture run fed it)
// with every row's logits kept (from a loaded model, or a file loaded on the CPU backend), the
// argmax of a row, and how far two logit sets are apart.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "model/model.h"

namespace fluoro::test {

// rms(a - b) / rms(b): how far logits a are from b, relative to b's size.
inline double nrmse(const std::vector<float>& a, const std::vector<float>& b) {
    double num = 0, den = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
        den += double(b[i]) * b[i];
    }
    return std::sqrt(num / den);
}

// (ids.size(), n_vocab) logits, row-major. The model's max_batch and max_logit_rows must be at
// least `chunk`.
inline std::vector<float> forward_in_chunks(Model& model, KvCache& kv, std::span<const int32_t> ids,
                                            int64_t chunk) {
    const int64_t n = int64_t(ids.size()), nv = model.n_vocab();
    std::vector<float> all(size_t(n * nv));
    for (int64_t at = 0; at < n; at += chunk) {
        const int64_t len = std::min(chunk, n - at);
        std::vector<int32_t> pos(static_cast<size_t>(len)), seq(static_cast<size_t>(len), 0),
            rows(static_cast<size_t>(len));
        for (int64_t i = 0; i < len; ++i)
            pos[size_t(i)] = int32_t(at + i), rows[size_t(i)] = int32_t(i);
        Batch b;
        b.tokens = ids.subspan(size_t(at), size_t(len));
        b.positions = pos;
        b.seq_ids = seq;
        b.logit_rows = rows;
        const std::span<const float> out = model.forward(b, kv);
        std::copy(out.begin(), out.end(), all.begin() + at * nv);
    }
    return all;
}

// forward_in_chunks on the model file at `path`, loaded on a 2-thread CPU backend with room for
// `chunk`-token steps and an F32 cache of n_ctx tokens (no rounding on the way into the cache).
inline std::vector<float> file_logits(const std::filesystem::path& path,
                                      std::span<const int32_t> ids, int64_t chunk, int64_t n_ctx,
                                      MlaPath mla = MlaPath::Absorbed) {
    cpu::CpuBackend be(2);
    ModelLoadOptions opt;
    opt.max_batch = chunk;
    opt.max_logit_rows = chunk;
    opt.mla = mla;
    const auto model = Model::load(path, be, opt);
    const auto kv = model->create_kv(n_ctx, 1, KvType::F32);
    return forward_in_chunks(*model, *kv, ids, chunk);
}

// One step over `toks` at positions pos0, pos0 + 1, ... of sequence 0, the cache's length then set
// past them (as Sequence does after a step); the last row's logits.
inline std::vector<float> forward_last(Model& model, KvCache& kv, std::span<const int32_t> toks,
                                       int32_t pos0) {
    std::vector<int32_t> pos(toks.size()), seq(toks.size(), 0);
    for (size_t i = 0; i < toks.size(); ++i) pos[i] = pos0 + int32_t(i);
    const int32_t last[] = {int32_t(toks.size() - 1)};
    Batch b;
    b.tokens = toks;
    b.positions = pos;
    b.seq_ids = seq;
    b.logit_rows = last;
    const std::span<const float> out = model.forward(b, kv);
    kv.set_length(0, pos0 + int64_t(toks.size()));
    return std::vector<float>(out.begin(), out.end());
}

inline int32_t argmax(const float* row, int64_t n) {
    return int32_t(std::max_element(row, row + n) - row);
}

}  // namespace fluoro::test
