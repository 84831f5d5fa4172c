// A model's vocabulary as its GGUF file describes it: token texts, scores and types, BPE merges
// with ranks, the special ids (bos/eos/eot/eom/unk/pad), the add-BOS/EOS and space-prefix rules,
// the pre-tokenizer choice and the end-of-generation set. Built once, validated, then read-only:
// token texts live in one owned pool and are found through a flat hash index over it, so loading
// Gemma's 262144 tokens takes tens of milliseconds and encoding allocates nothing per lookup.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/pre_tokenizer_table.h"

namespace fluoro::gguf {
class GgufFile;
}

namespace fluoro::tok {

inline constexpr int32_t kNoToken = -1;

// tokenizer.ggml.token_type values (llama.cpp's llama_token_type); never renumber.
enum class TokenType : uint8_t {
    Undefined = 0,
    Normal = 1,
    Unknown = 2,
    Control = 3,
    UserDefined = 4,
    Unused = 5,
    Byte = 6,
};

// tokenizer.ggml.model: "gpt2" is BPE after a regex pre-tokenizer (byte-level, or raw UTF-8 for
// "gemma4", which load_vocab reads as "gpt2" with tokenizer.ggml.pre "gemma4", as llama.cpp does);
// "llama" is SentencePiece-style; "bert" is WordPiece (tokenizer/wordpiece.h).
enum class TokenizerModel : uint8_t { Bpe, Spm, Wpm };

std::string_view model_name(TokenizerModel m);  // "gpt2" / "llama" / "bert"

// Everything a vocabulary is built from, as plain values: what load_vocab reads from a GGUF file,
// and what tests write by hand. Optional fields take llama.cpp's per-model defaults.
struct VocabData {
    TokenizerModel model = TokenizerModel::Bpe;
    std::optional<std::string> pre;   // tokenizer.ggml.pre (BPE only; see pre_tokenizer_table.h)
    std::vector<std::string> tokens;  // index = token id
    std::vector<float> scores;        // empty: all 0
    std::vector<TokenType> types;     // empty: all Normal
    std::vector<std::string> merges;  // "left right", rank = index (BPE only)
    std::optional<int64_t> bos, eos, eot, eom, unk, pad;
    std::optional<bool> add_bos, add_eos, add_space_prefix;
    // WordPiece only: the separator appended after the text ([SEP]) and the normalizer
    // (tokenizer.ggml.normalizer.lowercase / .strip_accents; strip_accents defaults to lowercase).
    std::optional<int64_t> sep;
    std::optional<bool> lowercase, strip_accents;
};

struct MergeRule {
    int32_t rank;    // index in tokenizer.ggml.merges; lower merges first
    int32_t result;  // id of the concatenated token
};

class Vocab {
  public:
    // Validates `data` and builds the lookup tables. Throws FormatError naming `source` and the
    // offending key, index or token, also for a tokenizer.ggml.pre llama.cpp does not know (it
    // would change the tokens); recoverable oddities (a missing pre-tokenizer, merges naming
    // tokens that do not exist) are recorded in warnings() instead.
    static Vocab build(VocabData data, std::string_view source = "vocabulary");

    Vocab(Vocab&&) noexcept = default;
    Vocab& operator=(Vocab&&) noexcept = default;
    Vocab(const Vocab&) = delete;  // lookups point into text_pool_
    Vocab& operator=(const Vocab&) = delete;

    int32_t size() const { return static_cast<int32_t>(types_.size()); }
    bool contains(int32_t id) const { return id >= 0 && id < size(); }
    // Token accessors; `id` must satisfy contains(id).
    std::string_view text(int32_t id) const {
        return {text_pool_.data() + offsets_[id], offsets_[id + 1] - offsets_[id]};
    }
    TokenType type(int32_t id) const { return types_[id]; }
    float score(int32_t id) const { return scores_.empty() ? 0.0f : scores_[id]; }

    // Id of the token spelled exactly `text`, or kNoToken.
    int32_t find(std::string_view text) const;
    // The BPE merge of the adjacent tokens (left, right), or nullptr.
    const MergeRule* merge(int32_t left, int32_t right) const;
    size_t n_merges() const { return merges_.size(); }
    // The token for a raw byte: SPM "<0xNN>", byte-level BPE the byte's alphabet character.
    int32_t byte_token(uint8_t byte) const { return byte_tokens_[byte]; }

    TokenizerModel model() const { return model_; }
    const std::string& pre_name() const { return pre_name_; }  // as written in the file
    PreTokenizer pre_tokenizer() const { return pre_; }
    bool ignore_merges() const { return ignore_merges_; }  // llama3: whole-word tokens win
    // BPE over GPT-2's byte alphabet (true), or over raw UTF-8 with "▁" for spaces and <0xNN>
    // byte tokens (Gemma 4).
    bool byte_level() const { return byte_level_; }

    int32_t bos() const { return bos_; }
    int32_t eos() const { return eos_; }
    int32_t eot() const { return eot_; }
    int32_t eom() const { return eom_; }
    int32_t unk() const { return unk_; }
    int32_t pad() const { return pad_; }
    bool add_bos() const { return add_bos_; }
    bool add_eos() const { return add_eos_; }
    bool add_space_prefix() const { return add_space_prefix_; }
    // WordPiece: [SEP], appended after the text with add_special; lowercase the input first.
    int32_t sep() const { return sep_; }
    bool lowercase() const { return lowercase_; }
    bool strip_accents() const { return strip_accents_; }  // NFD, then combining marks dropped

    // End of generation: eos, eot, eom and every token whose text is a known end marker.
    bool is_eog(int32_t id) const;
    const std::vector<int32_t>& eog_ids() const { return eog_; }  // ascending

    // CONTROL, USER_DEFINED and UNKNOWN tokens: split out of raw text before tokenizing.
    const std::vector<int32_t>& special_ids() const { return special_; }

    const std::vector<std::string>& warnings() const { return warnings_; }

  private:
    Vocab() = default;
    void index_tokens(const std::vector<std::string>& tokens, std::string_view source);
    void build_merges(const std::vector<std::string>& merges, std::string_view source);
    void resolve_specials(const VocabData& data, std::string_view source, bool no_default_bos);
    void build_byte_tokens();

    std::vector<char> text_pool_;    // all token texts back to back (vector: moves keep data())
    std::vector<uint32_t> offsets_;  // (size()+1) offsets into text_pool_
    std::vector<TokenType> types_;   // (size())
    std::vector<float> scores_;      // (size()) or empty
    // Open-addressing index text -> id: slots hold ids (kNoToken = empty), probed linearly from
    // the text's hash. One flat array instead of a node per token.
    std::vector<int32_t> slots_;
    std::unordered_map<uint64_t, MergeRule> merges_;  // key: left id << 32 | right id
    std::array<int32_t, 256> byte_tokens_{};

    TokenizerModel model_ = TokenizerModel::Bpe;
    std::string pre_name_;
    PreTokenizer pre_ = PreTokenizer::Default;
    bool ignore_merges_ = false;
    bool byte_level_ = true;
    int32_t bos_ = kNoToken, eos_ = kNoToken, eot_ = kNoToken, eom_ = kNoToken;
    int32_t unk_ = kNoToken, pad_ = kNoToken, sep_ = kNoToken;
    bool add_bos_ = false, add_eos_ = false, add_space_prefix_ = false, lowercase_ = false,
         strip_accents_ = false;
    std::vector<int32_t> eog_;
    std::vector<int32_t> special_;
    std::vector<std::string> warnings_;
};

// Reads tokenizer.ggml.* from a GGUF file. Throws FormatError for missing or malformed keys and
// UnsupportedError for a tokenizer model other than gpt2/llama (naming it).
Vocab load_vocab(const gguf::GgufFile& file);

}  // namespace fluoro::tok
