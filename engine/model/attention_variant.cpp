#include "model/attention_variant.h"

#include <cstdio>

namespace fluoro {

std::string AttentionVariant::label() const {
    if (name == "MLA") return "MLA r" + std::to_string(latent_rank);
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%g", q_per_kv);
    return name + " " + ratio + ":1";
}

AttentionVariant attention_variant(const Hparams& hp) {
    const uint64_t q = hp.n_head.empty() ? 0 : hp.n_head[0];
    const uint64_t kv = hp.n_head_kv.empty() ? 0 : hp.n_head_kv[0];
    AttentionVariant v;
    v.name = kv == 0 ? "?" : kv == q ? "MHA" : kv == 1 ? "MQA" : "GQA";
    v.q_per_kv = kv ? double(q) / double(kv) : 0.0;
    if (hp.kv_lora_rank > 0) {
        v.name = "MLA";
        v.q_per_kv = double(q);
        v.latent_rank = hp.kv_lora_rank;
    }
    return v;
}

}  // namespace fluoro
