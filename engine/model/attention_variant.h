// What kind of attention a model's head counts make, as the model report (`fluoro info`), the
// attention-variant eval (`fluoro eval attn`) and the window's model card name it: "MHA" (a KV
// head per query head), "GQA" (groups of query heads share one), "MQA" (one KV head), "MLA"
// (deepseek2's latent: every query head reads the one latent), "?" without head counts.
#pragma once

#include <cstdint>
#include <string>

#include "model/hparams.h"

namespace fluoro {

struct AttentionVariant {
    std::string name;
    double q_per_kv = 0;       // query heads per KV head (MLA: the query head count)
    uint64_t latent_rank = 0;  // MLA's kv_lora_rank, 0 otherwise

    // "GQA 3:1", "MQA 4:1", "MLA r512".
    std::string label() const;
};

AttentionVariant attention_variant(const Hparams& hp);

}  // namespace fluoro
