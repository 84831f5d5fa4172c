// load_vocab: the tokenizer.ggml.* keys of a GGUF file -> VocabData -> Vocab::build.
#include <type_traits>
#include <variant>

#include "core/error.h"
#include "gguf/gguf_file.h"
#include "tokenizer/vocab.h"

namespace fluoro::tok {

namespace {

constexpr std::string_view kModelKey = "tokenizer.ggml.model";

[[noreturn]] void wrong_type(const gguf::GgufFile& f, std::string_view key, const char* expected) {
    throw FormatError(f.name() + ": " + std::string(key) + " must be " + expected);
}

std::vector<std::string> string_array(const gguf::GgufFile& f, std::string_view key,
                                      bool required) {
    const gguf::Value* v = f.find(key);
    if (!v) {
        if (required) throw FormatError(f.name() + ": " + std::string(key) + " is missing");
        return {};
    }
    const auto* arr = std::get_if<std::vector<std::string>>(&v->storage());
    if (!arr) wrong_type(f, key, "an array of strings");
    return *arr;
}

// Numeric arrays arrive widened to double, int64 or uint64 depending on the on-disk type.
template <typename T>
std::vector<T> numeric_array(const gguf::GgufFile& f, std::string_view key) {
    const gguf::Value* v = f.find(key);
    if (!v) return {};
    std::vector<T> out;
    const bool ok = std::visit(
        [&](const auto& s) {
            using S = std::decay_t<decltype(s)>;
            if constexpr (std::is_same_v<S, std::vector<double>> ||
                          std::is_same_v<S, std::vector<int64_t>> ||
                          std::is_same_v<S, std::vector<uint64_t>>) {
                out.reserve(s.size());
                for (const auto& x : s) out.push_back(static_cast<T>(x));
                return true;
            } else {
                return false;
            }
        },
        v->storage());
    if (!ok) wrong_type(f, key, "a numeric array");
    return out;
}

std::optional<int64_t> token_id(const gguf::GgufFile& f, const char* name) {
    const std::string key = std::string("tokenizer.ggml.") + name;
    const std::optional<uint64_t> v = f.get_uint(key);
    if (!v) return std::nullopt;
    if (*v > static_cast<uint64_t>(INT32_MAX))
        throw FormatError(f.name() + ": " + key + " = " + std::to_string(*v) + " is out of range");
    return static_cast<int64_t>(*v);
}

// What llama.cpp calls the tokenizer models we do not implement, for the error message.
std::string unsupported_kind(std::string_view model) {
    if (model == "t5") return ", Unigram";
    if (model == "rwkv") return ", RWKV greedy trie";
    if (model == "plamo2") return ", PLaMo-2 Aho-Corasick";
    if (model == "no_vocab" || model == "none") return ", no vocabulary";
    return "";
}

}  // namespace

Vocab load_vocab(const gguf::GgufFile& file) {
    const std::optional<std::string> model = file.get_string(kModelKey);
    if (!model)
        throw FormatError(file.name() + ": " + std::string(kModelKey) +
                          " is missing; the file has no tokenizer");
    VocabData data;
    data.pre = file.get_string("tokenizer.ggml.pre");
    if (*model == "gpt2") {
        data.model = TokenizerModel::Bpe;
    } else if (*model == "gemma4") {
        // BPE over raw UTF-8; llama.cpp ignores the file's pre-tokenizer name for this model.
        data.model = TokenizerModel::Bpe;
        data.pre = "gemma4";
    } else if (*model == "llama") {
        data.model = TokenizerModel::Spm;
    } else if (*model == "bert") {
        data.model = TokenizerModel::Wpm;
        data.lowercase = file.get_bool("tokenizer.ggml.normalizer.lowercase");
        data.strip_accents = file.get_bool("tokenizer.ggml.normalizer.strip_accents");
    } else {
        throw UnsupportedError(file.name() + ": tokenizer model '" + *model + "' (" +
                               std::string(kModelKey) + unsupported_kind(*model) +
                               ") is not supported; supported: gpt2 (BPE), gemma4 (BPE on "
                               "UTF-8), llama (SentencePiece), bert (WordPiece)");
    }
    data.tokens = string_array(file, "tokenizer.ggml.tokens", true);
    data.scores = numeric_array<float>(file, "tokenizer.ggml.scores");
    for (int64_t t : numeric_array<int64_t>(file, "tokenizer.ggml.token_type"))
        data.types.push_back(t >= 0 && t <= 6 ? static_cast<TokenType>(t) : TokenType::Undefined);
    if (data.model == TokenizerModel::Bpe)
        data.merges = string_array(file, "tokenizer.ggml.merges", false);
    data.bos = token_id(file, "bos_token_id");
    data.eos = token_id(file, "eos_token_id");
    data.eot = token_id(file, "eot_token_id");
    data.eom = token_id(file, "eom_token_id");
    data.unk = token_id(file, "unknown_token_id");
    data.pad = token_id(file, "padding_token_id");
    if (data.model == TokenizerModel::Wpm) data.sep = token_id(file, "seperator_token_id");
    data.add_bos = file.get_bool("tokenizer.ggml.add_bos_token");
    data.add_eos = file.get_bool("tokenizer.ggml.add_eos_token");
    data.add_space_prefix = file.get_bool("tokenizer.ggml.add_space_prefix");
    return Vocab::build(std::move(data), file.name());
}

}  // namespace fluoro::tok
