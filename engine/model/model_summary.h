// A model file at a glance: hyperparameters, tensor statistics and sizes — what `fluoro info`
// and the GUI's model card show. Pure facts computed from a validated GgufFile.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "chat/chat_format.h"
#include "chat/template_detect.h"
#include "model/hparams.h"
#include "tensor/ggml_type.h"

namespace fluoro::gguf {
class GgufFile;
}

namespace fluoro {

struct TypeUsage {
    uint64_t tensors = 0;
    uint64_t elements = 0;
    uint64_t bytes = 0;
};

struct ModelSummary {
    std::string name;  // general.name ("" if absent)
    Hparams hparams;
    uint64_t n_params = 0;      // sum of tensor elements
    uint64_t tensor_bytes = 0;  // sum of tensor data sizes
    uint64_t file_bytes = 0;
    std::map<GgmlType, TypeUsage> type_mix;  // by tensor type
    bool tied_output = false;                // no output.weight: the LM head reuses token_embd
    ChatTemplateGuess chat_template;         // the family its markers suggest
    ChatFormat chat_format;  // how chats would be rendered (its own template or a family)
    // A mixture of experts (hparams.n_expert > 0): the parameters one token uses — everything
    // but the experts it is not routed to (expert_used_count of expert_count in each layer's
    // stacked *_exps tensors). n_params for a dense model.
    uint64_t n_params_active = 0;
    double bits_per_weight() const {
        return n_params ? 8.0 * double(tensor_bytes) / double(n_params) : 0;
    }
};

ModelSummary summarize_model(const gguf::GgufFile& file);

}  // namespace fluoro
