#include "gguf/test_vocab.h"

#include <array>
#include <utility>

#include "core/error.h"

namespace fluoro::gguf {
namespace {

// llama_token_type values (tokenizer.ggml.token_type).
constexpr int32_t kNormal = 1, kUnknown = 2, kControl = 3, kUnused = 5, kByte = 6;

// Merges in rank order, in plain text (' ' is a space); each side is a single character or the
// result of an earlier merge, so every merged token is reachable by both BPE and SPM merging.
constexpr std::array<std::pair<std::string_view, std::string_view>, 35> kMerges{{
    {" ", "t"},   {"h", "e"},    {" t", "he"},   {"i", "n"},   {" ", "a"},    {"e", "r"},
    {"o", "n"},   {" ", "s"},    {"r", "e"},     {"a", "n"},   {"o", "r"},    {" ", "w"},
    {"e", "n"},   {"in", "g"},   {" ", "c"},     {"l", "l"},   {"i", "s"},    {" ", "o"},
    {"e", "d"},   {"a", "t"},    {"H", "e"},     {"He", "ll"}, {"Hell", "o"}, {"o", "u"},
    {" w", "or"}, {" wor", "l"}, {" worl", "d"}, {" ", "i"},   {" i", "s"},   {" ", "H"},
    {" a", "n"},  {" an", "d"},  {"t", "h"},     {" o", "f"},  {" t", "o"},
}};

constexpr std::string_view kChatMlTemplate =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\\n' }}{% endif %}";

constexpr std::string_view kGemmaTemplate =
    "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'assistant' %}"
    "{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}"
    "{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<start_of_turn>model\\n' }}{% endif %}";

struct Vocab {
    std::vector<std::string> tokens;
    std::vector<int32_t> types;
    std::vector<float> scores;
    void add(std::string text, int32_t type, float score = 0.0f) {
        tokens.push_back(std::move(text));
        types.push_back(type);
        scores.push_back(score);
    }
};

std::string utf8(uint32_t cp) {
    std::string s;
    if (cp < 0x80) {
        s += static_cast<char>(cp);
    } else if (cp < 0x800) {
        s += static_cast<char>(0xC0 | (cp >> 6));
        s += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        s += static_cast<char>(0xE0 | (cp >> 12));
        s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return s;
}

// GPT-2's byte-to-unicode map: printable bytes keep their code point, the other 68 take
// U+0100.. in ascending byte order (so ' ' becomes "Ġ").
std::array<std::string, 256> byte_symbols() {
    std::array<std::string, 256> out;
    uint32_t next = 0x100;
    for (uint32_t b = 0; b < 256; ++b) {
        const bool printable =
            (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        out[b] = utf8(printable ? b : next++);
    }
    return out;
}

std::string bpe_text(std::string_view plain, const std::array<std::string, 256>& symbols) {
    std::string s;
    for (const char c : plain) s += symbols[static_cast<uint8_t>(c)];
    return s;
}

std::string spm_text(std::string_view plain) {
    std::string s;
    for (const char c : plain) s += c == ' ' ? std::string("\xE2\x96\x81") : std::string(1, c);
    return s;
}

Vocab bpe_vocab(std::vector<std::string>& merges) {
    const auto symbols = byte_symbols();
    Vocab v;
    for (const char* special : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"})
        v.add(special, kControl);
    for (const std::string& s : symbols) v.add(s, kNormal);
    for (const auto& [l, r] : kMerges) {
        merges.push_back(bpe_text(l, symbols) + " " + bpe_text(r, symbols));
        v.add(bpe_text(std::string(l) + std::string(r), symbols), kNormal);
    }
    return v;
}

Vocab spm_vocab() {
    Vocab v;
    v.add("<pad>", kControl);
    v.add("<eos>", kControl);
    v.add("<bos>", kControl);
    v.add("<unk>", kUnknown);
    v.add("<start_of_turn>", kControl);
    v.add("<end_of_turn>", kControl);
    constexpr std::string_view kHex = "0123456789ABCDEF";
    for (int b = 0; b < 256; ++b)
        v.add(std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">", kByte);
    v.add(spm_text(" "), kNormal, -1000.0f);
    for (char c = 0x21; c < 0x7F; ++c) v.add(std::string(1, c), kNormal, -1000.0f);
    float score = -1.0f;  // earlier merges score higher, so SPM merges them first
    for (const auto& [l, r] : kMerges)
        v.add(spm_text(std::string(l) + std::string(r)), kNormal, score--);
    return v;
}

void pad(Vocab& v, uint32_t n_vocab, std::string_view model) {
    if (v.tokens.size() > n_vocab) {
        throw Error("test model: n_vocab " + std::to_string(n_vocab) + " is smaller than the " +
                    std::string(model) + " test vocabulary (" + std::to_string(v.tokens.size()) +
                    " tokens)");
    }
    for (size_t i = 0; v.tokens.size() < n_vocab; ++i)
        v.add("<unused" + std::to_string(i) + ">", kUnused);
}

void add_common(GgufWriter& w, const Vocab& v) {
    w.add_string_array("tokenizer.ggml.tokens", v.tokens);
    w.add_i32_array("tokenizer.ggml.token_type", v.types);
}

}  // namespace

uint32_t test_vocab_size(std::string_view model) {
    std::vector<std::string> merges;
    if (model == "gpt2") return static_cast<uint32_t>(bpe_vocab(merges).tokens.size());
    if (model == "llama") return static_cast<uint32_t>(spm_vocab().tokens.size());
    throw Error("test model: unknown tokenizer model '" + std::string(model) +
                "'; expected \"gpt2\" or \"llama\"");
}

void add_test_vocab(GgufWriter& w, std::string_view model, uint32_t n_vocab) {
    test_vocab_size(model);  // rejects unknown models
    if (model == "gpt2") {
        std::vector<std::string> merges;
        Vocab v = bpe_vocab(merges);
        pad(v, n_vocab, model);
        w.add_string("tokenizer.ggml.model", "gpt2");
        add_common(w, v);
        w.add_string_array("tokenizer.ggml.merges", std::move(merges));
        w.add_u32("tokenizer.ggml.bos_token_id", 1);  // <|im_start|>, as SmolLM2
        w.add_u32("tokenizer.ggml.eos_token_id", 2);  // <|im_end|>
        w.add_u32("tokenizer.ggml.unknown_token_id", 0);
        w.add_u32("tokenizer.ggml.padding_token_id", 2);
        w.add_bool("tokenizer.ggml.add_bos_token", false);
        w.add_string("tokenizer.chat_template", std::string(kChatMlTemplate));
        return;
    }
    Vocab v = spm_vocab();
    pad(v, n_vocab, model);
    w.add_string("tokenizer.ggml.model", "llama");
    add_common(w, v);
    w.add_f32_array("tokenizer.ggml.scores", v.scores);
    w.add_u32("tokenizer.ggml.bos_token_id", 2);  // as Gemma 3
    w.add_u32("tokenizer.ggml.eos_token_id", 1);
    w.add_u32("tokenizer.ggml.unknown_token_id", 3);
    w.add_u32("tokenizer.ggml.padding_token_id", 0);
    w.add_bool("tokenizer.ggml.add_bos_token", true);
    w.add_bool("tokenizer.ggml.add_eos_token", false);
    w.add_bool("tokenizer.ggml.add_space_prefix", false);
    w.add_string("tokenizer.chat_template", std::string(kGemmaTemplate));
}

}  // namespace fluoro::gguf
