#include "decode/logit_lens.h"

#include <string>

#include "core/error.h"
#include "decode/position_rerun.h"
#include "model/model.h"

namespace fluoro {

std::vector<DistTop> logit_lens(Model& model, KvCache& kv, const LensRequest& r) {
    if (r.top_k < 1 || r.top_k > 100)
        throw Error("logit lens: top_k " + std::to_string(r.top_k) + " is not in 1..100");
    if (r.target >= model.n_vocab())
        throw Error("logit lens: token " + std::to_string(r.target) +
                    " is outside the vocabulary of " + std::to_string(model.n_vocab()));
    const int64_t n_layer = int64_t(model.hparams().n_layer);
    std::vector<DistTop> out;
    out.reserve(size_t(n_layer));
    PositionRerun rerun(model, kv, r.seq, r.slot, r.token);
    for (int64_t L = 1; L <= n_layer; ++L)
        out.push_back(dist_top(rerun.run(L == n_layer ? 0 : L), r.top_k, r.target));
    return out;
}

}  // namespace fluoro
