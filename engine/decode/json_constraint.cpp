#include "decode/json_constraint.h"

#include <limits>

#include "core/error.h"
#include "tokenizer/tokenizer.h"

namespace fluoro {

std::shared_ptr<const std::vector<std::string>> constraint_token_bytes(const tok::Tokenizer& t) {
    const tok::Vocab& v = t.vocab();
    auto out = std::make_shared<std::vector<std::string>>(size_t(v.size()));
    for (int32_t id = 0; id < v.size(); ++id) {
        const tok::TokenType type = v.type(id);
        if (type == tok::TokenType::Normal || type == tok::TokenType::Byte)
            (*out)[size_t(id)] = t.token_to_piece(id, false);
    }
    return out;
}

JsonConstraint::JsonConstraint(std::shared_ptr<const std::vector<std::string>> token_bytes)
    : bytes_(std::move(token_bytes)) {
    if (!bytes_) throw Error("JSON constraint: no vocabulary");
}

void JsonConstraint::mask(std::span<float> logits) const {
    const std::vector<std::string>& bytes = *bytes_;
    if (logits.size() > bytes.size())
        throw Error("JSON constraint: " + std::to_string(logits.size()) + " logits for a " +
                    std::to_string(bytes.size()) + "-token vocabulary");
    size_t allowed = 0;
    for (size_t id = 0; id < logits.size(); ++id) {
        JsonPrefix next = state_;
        if (!bytes[id].empty() && next.feed(bytes[id])) {
            ++allowed;
            continue;
        }
        logits[id] = -std::numeric_limits<float>::infinity();
    }
    if (allowed == 0)
        throw Error("JSON constraint: no token of the vocabulary continues the JSON object");
}

void JsonConstraint::accept(int32_t id) {
    if (id < 0 || size_t(id) >= bytes_->size() || (*bytes_)[size_t(id)].empty() ||
        !state_.feed((*bytes_)[size_t(id)]))
        throw Error("JSON constraint: token " + std::to_string(id) +
                    " does not continue the JSON object (it was not allowed)");
}

}  // namespace fluoro
