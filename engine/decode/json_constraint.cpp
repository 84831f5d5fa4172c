#include "decode/json_constraint.h"

#include <array>
#include <limits>

#include "core/error.h"
#include "tokenizer/tokenizer.h"

namespace fluoro {

std::shared_ptr<const ConstraintVocab> constraint_vocab(std::vector<std::string> token_bytes) {
    auto v = std::make_shared<ConstraintVocab>();
    v->bytes = std::move(token_bytes);
    v->first.resize(v->bytes.size());
    v->plain.resize(v->bytes.size());
    for (size_t id = 0; id < v->bytes.size(); ++id) {
        const std::string& b = v->bytes[id];
        if (b.empty()) continue;
        v->first[id] = uint8_t(b[0]);
        bool plain = true;
        for (const char c : b)
            if (c == '"' || c == '\\' || uint8_t(c) < 0x20) plain = false;
        v->plain[id] = plain;
    }
    return v;
}

std::shared_ptr<const ConstraintVocab> constraint_vocab(const tok::Tokenizer& t) {
    const tok::Vocab& v = t.vocab();
    std::vector<std::string> bytes(size_t(v.size()));
    for (int32_t id = 0; id < v.size(); ++id) {
        const tok::TokenType type = v.type(id);
        if (type == tok::TokenType::Normal || type == tok::TokenType::Byte)
            bytes[size_t(id)] = t.token_to_piece(id, false);
    }
    return constraint_vocab(std::move(bytes));
}

JsonConstraint::JsonConstraint(std::shared_ptr<const ConstraintVocab> vocab, JsonPrefix start)
    : vocab_(std::move(vocab)), state_(start) {
    if (!vocab_) throw Error("JSON constraint: no vocabulary");
}

void JsonConstraint::mask(std::span<float> logits) const {
    const ConstraintVocab& v = *vocab_;
    if (logits.size() > v.bytes.size())
        throw Error("JSON constraint: " + std::to_string(logits.size()) + " logits for a " +
                    std::to_string(v.bytes.size()) + "-token vocabulary");
    // Which first bytes the state takes at all: a token starting with another is out at once.
    std::array<bool, 256> first_ok{};
    for (int b = 0; b < 256; ++b) {
        JsonPrefix next = state_;
        first_ok[size_t(b)] = next.feed(uint8_t(b));
    }
    const bool in_string = state_.in_string();
    size_t allowed = 0;
    for (size_t id = 0; id < logits.size(); ++id) {
        // Plain text inside a string leaves the state as it is; anything else is tried.
        const auto fits = [&] {
            if (v.bytes[id].empty() || !first_ok[v.first[id]]) return false;
            if (in_string && v.plain[id]) return true;
            JsonPrefix next = state_;
            return next.feed(v.bytes[id]);
        };
        if (fits())
            ++allowed;
        else
            logits[id] = -std::numeric_limits<float>::infinity();
    }
    if (allowed == 0)
        throw Error("JSON constraint: no token of the vocabulary continues the JSON object");
}

void JsonConstraint::accept(int32_t id) {
    const std::vector<std::string>& bytes = vocab_->bytes;
    if (id < 0 || size_t(id) >= bytes.size() || bytes[size_t(id)].empty() ||
        !state_.feed(bytes[size_t(id)]))
        throw Error("JSON constraint: token " + std::to_string(id) +
                    " does not continue the JSON object (it was not allowed)");
}

}  // namespace fluoro
