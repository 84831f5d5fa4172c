#include "runtime/attention_overview.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "decode/position_rerun.h"
#include "model/model.h"
#include "telemetry/attention_patterns.h"

namespace fluoro {

void fill_attention_overview(Model& model, Backend& backend, KvCache& kv, int64_t seq, int64_t slot,
                             std::span<const int32_t> tokens, AttentionOverview& out) {
    if (slot < 0 || int64_t(tokens.size()) <= slot)
        throw Error("attention overview: slot " + std::to_string(slot) + " past the " +
                    std::to_string(tokens.size()) + " tokens given");
    const auto t0 = std::chrono::steady_clock::now();
    AttentionCapture cap;
    cap.regions.push_back({0, -1, -1, 1, 0, 0});  // every layer and head, the one query row
    backend.set_attention_capture(&cap);
    try {
        PositionRerun rerun(model, kv, seq, slot, tokens[size_t(slot)]);
        rerun.run();
    } catch (...) {
        backend.set_attention_capture(nullptr);
        throw;
    }
    backend.set_attention_capture(nullptr);
    const Hparams& hp = model.hparams();
    out.n_layer = int32_t(hp.n_layer);
    out.n_head = 0;
    for (const uint64_t h : hp.n_head) out.n_head = std::max(out.n_head, int32_t(h));
    const size_t n_keys = size_t(slot + 1);
    out.position = slot;
    out.heads.assign(size_t(out.n_layer) * size_t(out.n_head), HeadPattern{});
    out.weights.assign(out.heads.size() * n_keys, 0.0f);
    const std::span<const int32_t> keys = tokens.first(n_keys);
    for (const CapturedAttentionRow& r : cap.rows) {
        if (r.layer < 0 || r.layer >= out.n_layer || r.head < 0 || r.head >= out.n_head) continue;
        float* dst =
            out.weights.data() + (size_t(r.layer) * size_t(out.n_head) + size_t(r.head)) * n_keys;
        for (size_t k = 0; k < r.weights.size(); ++k)
            if (const int64_t key = r.key_begin + int64_t(k); key >= 0 && key < int64_t(n_keys))
                dst[size_t(key)] = r.weights[k];
        out.heads[size_t(r.layer) * size_t(out.n_head) + size_t(r.head)] =
            head_pattern(std::span<const float>(dst, n_keys), keys);
    }
    const auto& tk = model.tokenizer();
    out.key_pieces.clear();
    for (const int32_t id : keys) out.key_pieces.push_back(tk.token_to_piece(id, true));
    out.ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace fluoro
