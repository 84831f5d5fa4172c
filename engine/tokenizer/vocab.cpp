#include "tokenizer/vocab.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <limits>

#include "core/error.h"
#include "tokenizer/byte_level.h"

namespace fluoro::tok {

namespace {

// Texts that mark the end of a turn, in the order an eot token is guessed from them when the file
// names none (llama.cpp's list, made deterministic by this order).
constexpr std::string_view kEotTexts[] = {
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<EOT>",
    "_<EOT>",
    "<\xef\xbd\x9c"
    "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
    "<end_of_utterance>",
};
constexpr std::string_view kEomText = "<|eom_id|>";

std::string quoted(std::string_view s) {
    std::string out = "'";
    out.append(s.substr(0, 64));
    if (s.size() > 64) out += "...";
    return out + "'";
}

}  // namespace

std::string_view model_name(TokenizerModel m) {
    switch (m) {
        case TokenizerModel::Bpe:
            return "gpt2";
        case TokenizerModel::Spm:
            return "llama";
        case TokenizerModel::Wpm:
            return "bert";
    }
    return "?";
}

Vocab Vocab::build(VocabData data, std::string_view source) {
    const size_t n = data.tokens.size();
    const std::string src(source);
    if (n == 0) throw FormatError(src + ": tokenizer.ggml.tokens is empty");
    if (n > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
        throw FormatError(src + ": tokenizer.ggml.tokens has too many entries");
    if (!data.scores.empty() && data.scores.size() != n)
        throw FormatError(src + ": tokenizer.ggml.scores has " +
                          std::to_string(data.scores.size()) +
                          " entries but tokenizer.ggml.tokens has " + std::to_string(n));
    if (!data.types.empty() && data.types.size() != n)
        throw FormatError(src + ": tokenizer.ggml.token_type has " +
                          std::to_string(data.types.size()) +
                          " entries but tokenizer.ggml.tokens has " + std::to_string(n));

    Vocab v;
    bool no_default_bos = false;
    v.model_ = data.model;
    v.scores_ = std::move(data.scores);
    v.types_ =
        data.types.empty() ? std::vector<TokenType>(n, TokenType::Normal) : std::move(data.types);
    for (TokenType& t : v.types_)
        if (static_cast<uint8_t>(t) > static_cast<uint8_t>(TokenType::Byte))
            t = TokenType::Undefined;
    v.index_tokens(data.tokens, source);

    if (v.model_ == TokenizerModel::Bpe) {
        v.pre_name_ = data.pre.value_or("");
        // As llama.cpp: a missing name means its generic regexes (with a warning), an unknown one
        // is refused - another split gives other tokens, and the model would read nonsense.
        const PreTokenizerSpec* spec = find_pre_tokenizer(data.pre ? v.pre_name_ : "default");
        if (!spec)
            throw FormatError(src + ": tokenizer.ggml.pre = " + quoted(v.pre_name_) +
                              " is not a pre-tokenizer this build knows (llama.cpp's names; see "
                              "engine/tokenizer/pre_tokenizer_table.cpp)");
        v.pre_ = spec->family;
        if (!data.pre) {
            v.warnings_.push_back(
                "tokenizer.ggml.pre is missing; using the default regexes, tokenization may not "
                "match the model's own tokenizer");
        } else if (v.pre_ == PreTokenizer::Default) {
            v.warnings_.push_back(
                "pre-tokenizer 'default': generic regexes, tokenization "
                "may not match the model's own tokenizer");
        }
        v.ignore_merges_ = spec->ignore_merges;
        v.byte_level_ = !pre_tokenizer_is_raw_utf8(v.pre_);
        no_default_bos = spec->no_bos;
        v.build_merges(data.merges, source);
        v.add_bos_ = data.add_bos.value_or(spec->add_bos);
        v.add_space_prefix_ = data.add_space_prefix.value_or(false);
    } else if (v.model_ == TokenizerModel::Wpm) {
        // As llama.cpp for BERT: [CLS] (the BOS) first and [SEP] last with add_special.
        v.pre_name_ = data.pre.value_or("");
        v.add_bos_ = data.add_bos.value_or(true);
        // BERT's normalizer, llama.cpp's defaults: lowercase unless the file says otherwise,
        // strip accents when lowercasing unless it says otherwise.
        v.lowercase_ = data.lowercase.value_or(true);
        v.strip_accents_ = data.strip_accents.value_or(v.lowercase_);
    } else {
        v.pre_name_ = data.pre.value_or("");
        v.add_bos_ = data.add_bos.value_or(true);
        v.add_space_prefix_ = data.add_space_prefix.value_or(true);
    }
    v.add_eos_ = data.add_eos.value_or(false);
    v.resolve_specials(data, source, no_default_bos);
    v.build_byte_tokens();
    return v;
}

void Vocab::index_tokens(const std::vector<std::string>& tokens, std::string_view source) {
    size_t total = 0;
    for (const std::string& t : tokens) total += t.size();
    if (total > std::numeric_limits<uint32_t>::max())
        throw FormatError(std::string(source) + ": token texts exceed 4 GiB");
    text_pool_.reserve(total);
    offsets_.reserve(tokens.size() + 1);
    offsets_.push_back(0);
    for (const std::string& t : tokens) {
        text_pool_.insert(text_pool_.end(), t.begin(), t.end());
        offsets_.push_back(static_cast<uint32_t>(text_pool_.size()));
    }
    size_t n_slots = 16;
    while (n_slots < 2 * tokens.size()) n_slots *= 2;
    slots_.assign(n_slots, kNoToken);
    const size_t mask = n_slots - 1;
    size_t duplicates = 0;
    for (int32_t id = 0; id < size(); ++id) {
        const std::string_view t = text(id);
        if (t.empty()) {
            warnings_.push_back("token " + std::to_string(id) + " has empty text");
            continue;
        }
        size_t slot = std::hash<std::string_view>{}(t)&mask;
        while (slots_[slot] != kNoToken && text(slots_[slot]) != t) slot = (slot + 1) & mask;
        if (slots_[slot] == kNoToken) {
            slots_[slot] = id;
        } else if (duplicates++ == 0) {
            warnings_.push_back("duplicate token text " + quoted(t) + " (id " + std::to_string(id) +
                                "); the lowest id is used");
        }
    }
}

void Vocab::build_merges(const std::vector<std::string>& merges, std::string_view source) {
    merges_.reserve(merges.size());
    size_t unknown = 0;
    for (size_t rank = 0; rank < merges.size(); ++rank) {
        const std::string& m = merges[rank];
        const size_t cut = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
        if (cut == std::string::npos || cut + 1 >= m.size())
            throw FormatError(std::string(source) + ": tokenizer.ggml.merges[" +
                              std::to_string(rank) + "] = " + quoted(m) + " is not \"left right\"");
        const std::string_view left(m.data(), cut);
        const std::string_view right(m.data() + cut + 1, m.size() - cut - 1);
        const int32_t l = find(left), r = find(right);
        std::string joined(left);
        joined.append(right);
        const int32_t result = find(joined);
        if (l == kNoToken || r == kNoToken || result == kNoToken) {
            ++unknown;
            continue;
        }
        const uint64_t key = (uint64_t(uint32_t(l)) << 32) | uint32_t(r);
        merges_.emplace(key, MergeRule{static_cast<int32_t>(rank), result});  // first rank wins
    }
    if (unknown > 0)
        warnings_.push_back(std::to_string(unknown) +
                            " merges name tokens that are not in the vocabulary; ignored");
}

void Vocab::resolve_specials(const VocabData& data, std::string_view source, bool no_default_bos) {
    const bool spm = model_ == TokenizerModel::Spm;
    auto resolve = [&](const std::optional<int64_t>& value, const char* key,
                       int32_t fallback) -> int32_t {
        if (!value) return contains(fallback) ? fallback : kNoToken;
        if (*value < 0 || *value >= size())
            throw FormatError(std::string(source) + ": tokenizer.ggml." + key + " = " +
                              std::to_string(*value) + " is out of range (the vocabulary has " +
                              std::to_string(size()) + " tokens)");
        return static_cast<int32_t>(*value);
    };
    // llama.cpp's defaults when a key is absent: SPM bos=1 eos=2 unk=0, byte-level BPE bos=eos=11.
    // Gemma 4 has no defaults (ids come from the file), chatglm no default BOS.
    const bool raw = !spm && !byte_level_;
    // WordPiece (BERT): [CLS] 101 is the BOS, [UNK] 100, [SEP] 102, [PAD] 0, no EOS.
    const bool wpm = model_ == TokenizerModel::Wpm;
    bos_ = resolve(data.bos, "bos_token_id",
                   wpm                     ? 101
                   : spm                   ? 1
                   : raw || no_default_bos ? kNoToken
                                           : 11);
    eos_ = resolve(data.eos, "eos_token_id", wpm ? kNoToken : spm ? 2 : raw ? kNoToken : 11);
    eot_ = resolve(data.eot, "eot_token_id", kNoToken);
    eom_ = resolve(data.eom, "eom_token_id", kNoToken);
    unk_ = resolve(data.unk, "unknown_token_id", wpm ? 100 : spm ? 0 : kNoToken);
    pad_ = resolve(data.pad, "padding_token_id", wpm ? 0 : kNoToken);
    sep_ = resolve(data.sep, "seperator_token_id", wpm ? 102 : kNoToken);
    if (wpm && unk_ == kNoToken)
        throw FormatError(std::string(source) +
                          ": a WordPiece vocabulary needs an unknown token (tokenizer.ggml."
                          "unknown_token_id) for words it cannot spell");
    if (add_bos_ && bos_ == kNoToken)
        throw FormatError(std::string(source) +
                          ": tokenizer.ggml.add_bos_token is true but there is no BOS token");
    if (add_eos_ && eos_ == kNoToken)
        throw FormatError(std::string(source) +
                          ": tokenizer.ggml.add_eos_token is true but there is no EOS token");

    // End markers are recognised by text, and forced to CONTROL so they are never text.
    auto force_control = [&](int32_t id) {
        if (types_[id] != TokenType::Control) {
            warnings_.push_back("token " + std::to_string(id) + " " + quoted(text(id)) +
                                " marks an end of turn but is not CONTROL; treated as CONTROL");
            types_[id] = TokenType::Control;
        }
    };
    std::vector<int32_t> eog;
    for (std::string_view t : kEotTexts) {
        const int32_t id = find(t);
        if (id == kNoToken) continue;
        if (eot_ == kNoToken) eot_ = id;
        eog.push_back(id);
        force_control(id);
    }
    if (const int32_t id = find(kEomText); id != kNoToken) {
        if (eom_ == kNoToken) eom_ = id;
        eog.push_back(id);
        force_control(id);
    }
    for (int32_t id : {eos_, eot_, eom_})
        if (id != kNoToken) eog.push_back(id);
    std::sort(eog.begin(), eog.end());
    eog.erase(std::unique(eog.begin(), eog.end()), eog.end());
    eog_ = std::move(eog);

    for (int32_t id = 0; id < size(); ++id) {
        const TokenType t = types_[id];
        if ((t == TokenType::Control || t == TokenType::UserDefined || t == TokenType::Unknown) &&
            !text(id).empty())
            special_.push_back(id);
    }
}

void Vocab::build_byte_tokens() {
    for (unsigned b = 0; b < 256; ++b) {
        if (model_ == TokenizerModel::Wpm) {
            byte_tokens_[b] = kNoToken;  // WordPiece has no byte fallback: [UNK]
        } else if (model_ == TokenizerModel::Spm || !byte_level_) {
            char name[8];
            std::snprintf(name, sizeof name, "<0x%02X>", b);
            byte_tokens_[b] = find(name);
        } else {
            byte_tokens_[b] = find(byte_level_char(static_cast<uint8_t>(b)));
        }
    }
}

int32_t Vocab::find(std::string_view t) const {
    if (t.empty() || slots_.empty()) return kNoToken;
    const size_t mask = slots_.size() - 1;
    for (size_t slot = std::hash<std::string_view>{}(t)&mask;; slot = (slot + 1) & mask) {
        const int32_t id = slots_[slot];
        if (id == kNoToken || text(id) == t) return id;
    }
}

const MergeRule* Vocab::merge(int32_t left, int32_t right) const {
    const auto it = merges_.find((uint64_t(uint32_t(left)) << 32) | uint32_t(right));
    return it == merges_.end() ? nullptr : &it->second;
}

bool Vocab::is_eog(int32_t id) const {
    return std::binary_search(eog_.begin(), eog_.end(), id);
}

}  // namespace fluoro::tok
