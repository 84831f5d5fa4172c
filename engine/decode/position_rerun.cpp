#include "decode/position_rerun.h"

#include <string>

#include "core/error.h"
#include "kv/kv_cache.h"
#include "model/model.h"

namespace fluoro {

PositionRerun::PositionRerun(Model& model, KvCache& kv, int64_t seq, int64_t slot, int32_t token)
    : model_(model), kv_(kv), seq_(seq), slot_(slot), token_(token) {
    if (seq < 0 || seq >= kv.shape().n_seq || slot < 0 || slot >= kv.length(seq))
        throw Error("slot " + std::to_string(slot) + " of sequence " + std::to_string(seq) +
                    " is not cached" +
                    (seq >= 0 && seq < kv.shape().n_seq
                         ? " (it holds " + std::to_string(kv.length(seq)) + ")"
                         : std::string()));
    if (token < 0 || token >= model.n_vocab())
        throw Error("token " + std::to_string(token) + " is outside the vocabulary of " +
                    std::to_string(model.n_vocab()));
    const KvShape& sh = kv.shape();
    for (int64_t il = 0; il < sh.n_layer; ++il) {
        k_.emplace_back(sh.k_row_bytes(il));
        v_.emplace_back(sh.v_row_bytes(il));
        kv.read_k(il, seq, slot, k_.back().data());
        kv.read_v(il, seq, slot, v_.back().data());
    }
}

PositionRerun::~PositionRerun() {
    for (size_t il = 0; il < k_.size(); ++il) {
        kv_.write_k(int64_t(il), seq_, slot_, k_[il].data());
        kv_.write_v(int64_t(il), seq_, slot_, v_[il].data());
    }
}

std::span<const float> PositionRerun::run(int64_t layers) {
    const int32_t token[] = {token_}, pos[] = {int32_t(slot_)}, seq[] = {int32_t(seq_)},
                  row[] = {0};
    Batch b;
    b.tokens = token;
    b.positions = pos;
    b.seq_ids = seq;
    b.logit_rows = row;
    b.exit_layer = layers;
    return model_.forward(b, kv_);
}

}  // namespace fluoro
