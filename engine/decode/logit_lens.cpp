#include "decode/logit_lens.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "kv/kv_cache.h"
#include "model/model.h"

namespace fluoro {
namespace {

// The slot's K and V rows in every layer, saved on construction and written back on destruction.
class SavedRows {
  public:
    SavedRows(KvCache& kv, int64_t seq, int64_t slot) : kv_(kv), seq_(seq), slot_(slot) {
        const KvShape& sh = kv.shape();
        for (int64_t il = 0; il < sh.n_layer; ++il) {
            const auto* k = static_cast<const std::byte*>(kv.k_row(il, seq, slot));
            const auto* v = static_cast<const std::byte*>(kv.v_row(il, seq, slot));
            k_.emplace_back(k, k + sh.k_row_bytes(il));
            v_.emplace_back(v, v + sh.v_row_bytes(il));
        }
    }
    ~SavedRows() {
        for (size_t il = 0; il < k_.size(); ++il) {
            std::memcpy(kv_.k_row(int64_t(il), seq_, slot_), k_[il].data(), k_[il].size());
            std::memcpy(kv_.v_row(int64_t(il), seq_, slot_), v_[il].data(), v_[il].size());
        }
    }
    SavedRows(const SavedRows&) = delete;
    SavedRows& operator=(const SavedRows&) = delete;

  private:
    KvCache& kv_;
    int64_t seq_, slot_;
    std::vector<std::vector<std::byte>> k_, v_;
};

}  // namespace

std::vector<DistTop> logit_lens(Model& model, KvCache& kv, const LensRequest& r) {
    if (r.top_k < 1 || r.top_k > 100)
        throw Error("logit lens: top_k " + std::to_string(r.top_k) + " is not in 1..100");
    if (r.slot < 0 || r.slot >= kv.length(r.seq))
        throw Error("logit lens: slot " + std::to_string(r.slot) + " is not cached (sequence " +
                    std::to_string(r.seq) + " holds " + std::to_string(kv.length(r.seq)) + ")");
    const int64_t nv = model.n_vocab();
    if (r.token < 0 || r.token >= nv || r.target >= nv)
        throw Error("logit lens: token " + std::to_string(std::max(r.token, r.target)) +
                    " is outside the vocabulary of " + std::to_string(nv));
    const int64_t n_layer = int64_t(model.hparams().n_layer);
    const int32_t token[] = {r.token}, pos[] = {int32_t(r.slot)}, seq[] = {int32_t(r.seq)},
                  row[] = {0};
    std::vector<DistTop> out;
    out.reserve(size_t(n_layer));
    const SavedRows saved(kv, r.seq, r.slot);
    for (int64_t L = 1; L <= n_layer; ++L) {
        Batch b;
        b.tokens = token;
        b.positions = pos;
        b.seq_ids = seq;
        b.logit_rows = row;
        b.exit_layer = L == n_layer ? 0 : L;
        out.push_back(dist_top(model.forward(b, kv), r.top_k, r.target));
    }
    return out;
}

}  // namespace fluoro
