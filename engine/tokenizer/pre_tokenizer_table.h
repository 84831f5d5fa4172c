// Every tokenizer.ggml.pre name llama.cpp knows, grouped into families that split text the same
// way (the regexes are in pre_tokenizer_table.cpp), with the per-name behaviour that goes with
// them: whether whole-word tokens skip merging, the add-BOS default, and whether the vocabulary
// is byte-level (GPT-2's byte alphabet) or raw UTF-8 with "▁" for spaces (Gemma 4).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace fluoro::tok {

// Regex families for BPE, chosen by tokenizer.ggml.pre. Names follow the first model that used
// each; several names map to one family (see kPreTokenizers).
enum class PreTokenizer : uint8_t {
    Default,          // llama.cpp's generic split (missing tokenizer.ggml.pre, "default")
    Gpt2,             // GPT-2: contractions, letters, numbers, other, spaces
    Smollm,           // single digits, then GPT-2 (starcoder, refact, command-r, ...)
    Llama3,           // Llama 3 / tiktoken cl100k: up to 3 digits
    Qwen2,            // like Llama 3 with single digits
    Qwen35,           // Qwen 2 with combining marks kept on their letters
    DeepseekLlm,      // DeepSeek LLM: newline, Latin/Greek/... words, ASCII punct., CJK, numbers
    DeepseekCoder,    // DeepSeek Coder: newline, letters, punctuation, CJK, single digits
    Deepseek3,        // DeepSeek V3: up to 3 digits, CJK, punctuation-led ASCII words
    Spark25,          // Spark 2.5: Deepseek3 with single newlines and single digits
    Youtu,            // Youtu: Hangul/CJK runs, then a cased-word split
    Falcon,           // Falcon: punctuation runs, GPT-2, 3-digit groups
    Bloom,            // BLOOM / Poro / GPT-3 Finnish: split before spaces and . , ! ? ...
    Viking,           // Bloom with single digits
    Tekken,           // Mistral's tekken: cased words (a capital run starts a new word)
    Chameleon,        // Chameleon: sentinels, image tokens, whitespace runs, digits, punctuation
    Gpt4o,            // tiktoken o200k (gpt-4o, gpt-oss, Llama 4): cased words + contractions
    GraniteEmbMulti,  // Gpt4o with combining marks
    TinyAya,          // digits grouped by 3 from the right, then Gpt4o's split
    KimiK2,           // Han runs, then Gpt4o's split without Han
    Superbpe,         // numbers, split into groups of 3 from the right
    Bailingmoe,       // Bailing: Qwen 2 with one newline per piece
    SeedCoder,        // Seed-Coder: Qwen 2 without newlines in punctuation runs
    Ufakzeka,         // Qwen 2 without contractions
    Jais2,            // Llama 3 with whitespace runs cut at powers of two
    Afmoe,            // digits grouped by 3 from the right, CJK/SE-Asian runs, Deepseek3's split
    Laguna,           // lines, then Qwen 2
    ExaoneMoe,        // EXAONE MoE: letter runs may hold single spaces
    Minicpm5,         // MiniCPM 5: up to 3 digits, then Llama 3 with any-length numbers
    Gemma4,           // Gemma 4: raw UTF-8, spaces as "▁", split only at newline runs
    SarvamMoe,        // Sarvam MoE: as Gemma 4, without its whole-newline-run lookup
};

struct PreTokenizerSpec {
    std::string_view name;  // tokenizer.ggml.pre
    PreTokenizer family;
    bool ignore_merges;  // a piece that is itself a token is emitted whole (tiktoken-style)
    bool add_bos;        // tokenizer.ggml.add_bos_token's default when the key is absent
    bool no_bos;         // no default BOS id (tokenizer.ggml.bos_token_id absent means none)
};

// The spec for a tokenizer.ggml.pre name, or nullptr for a name llama.cpp does not know either.
const PreTokenizerSpec* find_pre_tokenizer(std::string_view name);

// All known names (tests, diagnostics).
std::span<const PreTokenizerSpec> pre_tokenizer_specs();

// The regexes of a family, in application order (see RegexSplitter).
std::span<const std::string_view> pre_tokenizer_patterns(PreTokenizer pre);

// A family's canonical name (its first tokenizer.ggml.pre name).
std::string_view pre_tokenizer_name(PreTokenizer pre);

// The family works on raw UTF-8 with spaces written "▁" and <0xNN> byte tokens, not on GPT-2's
// byte alphabet.
bool pre_tokenizer_is_raw_utf8(PreTokenizer pre);

}  // namespace fluoro::tok
