#include "tokenizer/pre_tokenizer_table.h"

#include <algorithm>
#include <iterator>

namespace fluoro::tok {

namespace {

using F = PreTokenizer;

// tokenizer.ggml.pre names as llama.cpp's vocabulary loader (llama-cpp-python 0.3.36) groups them,
// with its per-name flags. A name missing here is one llama.cpp refuses too.
//   name, family, ignore_merges, add_bos, no_bos
constexpr PreTokenizerSpec kPreTokenizers[] = {
    {"default", F::Default, false, false, false},
    {"llama3", F::Llama3, true, true, false},
    {"llama-v3", F::Llama3, true, true, false},
    {"llama-bpe", F::Llama3, true, true, false},
    {"falcon3", F::Llama3, true, true, false},
    {"falcon-h1", F::Llama3, true, true, false},
    {"pixtral", F::Llama3, true, true, false},
    {"midm-2.0", F::Llama3, true, true, false},
    {"lfm2", F::Llama3, true, true, false},
    {"jina-v5-nano", F::Llama3, true, true, false},
    {"dbrx", F::Llama3, false, false, false},
    {"smaug-bpe", F::Llama3, false, false, false},
    {"chatglm-bpe", F::Llama3, false, false, true},
    {"glm4", F::Llama3, true, false, true},
    {"glm5", F::Llama3, true, false, true},
    {"minicpm5", F::Minicpm5, true, false, false},
    {"deepseek-llm", F::DeepseekLlm, false, false, false},
    {"deepseek-coder", F::DeepseekCoder, false, false, false},
    {"deepseek-v3", F::Deepseek3, false, false, false},
    {"hunyuan-dense", F::Deepseek3, false, false, false},
    {"hy_v4", F::Deepseek3, false, false, false},
    {"joyai-llm", F::Deepseek3, false, false, false},
    {"spark2_5", F::Spark25, false, false, false},
    {"youtu", F::Youtu, true, false, false},
    {"falcon", F::Falcon, false, false, false},
    {"gpt-2", F::Gpt2, false, false, false},
    {"phi-2", F::Gpt2, false, false, false},
    {"jina-es", F::Gpt2, false, false, false},
    {"jina-de", F::Gpt2, false, false, false},
    {"gigachat", F::Gpt2, false, false, false},
    {"jina-v2-es", F::Gpt2, false, false, false},
    {"jina-v2-de", F::Gpt2, false, false, false},
    {"a.x-4.0", F::Gpt2, false, false, false},
    {"mellum", F::Gpt2, false, false, false},
    {"modern-bert", F::Gpt2, false, false, false},
    {"jina-v1-en", F::Gpt2, false, false, false},
    {"jina-v2-code", F::Gpt2, false, false, false},
    {"roberta-bpe", F::Gpt2, false, false, false},
    {"mpt", F::Gpt2, false, false, false},
    {"olmo", F::Gpt2, false, false, false},
    {"jais", F::Gpt2, false, false, false},
    {"trillion", F::Gpt2, false, false, false},
    {"granite-docling", F::Gpt2, false, false, false},
    {"exaone4", F::Gpt2, false, false, false},
    {"jais-2", F::Jais2, false, false, false},
    {"starcoder", F::Smollm, false, false, false},
    {"refact", F::Smollm, false, false, false},
    {"command-r", F::Smollm, false, false, false},
    {"smollm", F::Smollm, false, false, false},
    {"codeshell", F::Smollm, false, false, false},
    {"exaone", F::Smollm, false, false, false},
    {"minerva-7b", F::Smollm, false, false, false},
    {"mellum2", F::Smollm, false, false, false},
    {"qwen2", F::Qwen2, false, false, false},
    {"deepseek-r1-qwen", F::Qwen2, false, false, false},
    {"kormo", F::Qwen2, false, false, false},
    {"f2llmv2", F::Qwen2, false, false, false},
    {"stablelm2", F::Qwen2, false, false, false},
    {"megrez", F::Qwen2, false, false, false},
    {"hunyuan", F::Qwen2, false, false, false},
    {"solar-open", F::Qwen2, false, false, false},
    {"grok-2", F::Qwen2, false, false, false},
    {"qwen35", F::Qwen35, false, false, false},
    {"poro-chat", F::Bloom, false, false, false},
    {"bloom", F::Bloom, false, false, false},
    {"gpt3-finnish", F::Bloom, false, false, false},
    {"viking", F::Viking, false, false, false},
    {"tekken", F::Tekken, true, true, false},
    {"chameleon", F::Chameleon, false, true, false},
    {"gpt-4o", F::Gpt4o, false, false, false},
    {"llama4", F::Gpt4o, false, false, false},
    {"kanana2", F::Gpt4o, false, false, false},
    {"talkie", F::Gpt4o, false, false, false},
    {"minimax-m2", F::Gpt4o, false, false, false},
    {"granite-embed-multi-97m", F::GraniteEmbMulti, true, false, false},
    {"tiny_aya", F::TinyAya, false, false, false},
    {"cohere2moe", F::TinyAya, false, false, false},
    {"kimi-k2", F::KimiK2, false, false, false},
    {"superbpe", F::Superbpe, false, false, false},
    {"bailingmoe", F::Bailingmoe, false, false, false},
    {"bailingmoe2", F::Bailingmoe, false, false, false},
    {"llada-moe", F::Bailingmoe, false, false, false},
    {"seed-coder", F::SeedCoder, false, false, false},
    {"ufakzeka", F::Ufakzeka, false, false, false},
    {"afmoe", F::Afmoe, false, false, false},
    {"laguna", F::Laguna, false, false, false},
    {"exaone-moe", F::ExaoneMoe, false, false, false},
    {"gemma4", F::Gemma4, false, false, false},
    {"granite-embed-multi-311m", F::Gemma4, false, false, false},
    {"sarvam-moe", F::SarvamMoe, false, false, false},
};

// Building blocks. "(?i:'s|...)" in the published regexes is spelled out as llama.cpp does, so
// Unicode case folding cannot turn "'ſ" (long s) into a contraction.
#define FLUORO_CONTRACTIONS "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
#define FLUORO_TAIL R"( ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"
// tiktoken o200k's cased words: an optional capital run, then lower-case letters; or a capital run
// then lower-case letters (marks and caseless letters count as both).
#define FLUORO_UPPER R"([\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}])"
#define FLUORO_LOWER R"([\p{Ll}\p{Lm}\p{Lo}\p{M}])"
#define FLUORO_CASED_WORDS(upper, lower, suffix)                                                \
    R"([^\r\n\p{L}\p{N}]?)" upper "*" lower "+" suffix R"(|[^\r\n\p{L}\p{N}]?)" upper "+" lower \
    "*" suffix

// GPT-2's split as HuggingFace's ByteLevel pre-tokenizer writes it. (llama.cpp drops the final
// "|\s+"; the unmatched whitespace then becomes a gap piece, which is the same piece.)
constexpr std::string_view kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr std::string_view kLlama3 =
    FLUORO_CONTRACTIONS R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|)" FLUORO_TAIL;
constexpr std::string_view kQwen2 =
    FLUORO_CONTRACTIONS R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|)" FLUORO_TAIL;
constexpr std::string_view kDigit = R"(\p{N})";
constexpr std::string_view kDigits3 = R"(\p{N}{1,3})";
// Digit runs cut into groups of three counted from the right ("1234567" -> 1 234 567).
constexpr std::string_view kDigitsFromRight = R"(\p{N}{1,3}(?=(?:\p{N}{3})*(?!\p{N})))";
constexpr std::string_view kDeepseek3Words =
    R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+|)"
    R"( ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kCjkKana = "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+";
constexpr std::string_view kBloom = " ?[^(\\s|.,!?\u2026\u3002\uff0c\u3001\u0964\u06d4\u060c)]+";
constexpr std::string_view kGpt4o =
    FLUORO_CASED_WORDS(FLUORO_UPPER, FLUORO_LOWER,
                       "(?:" FLUORO_CONTRACTIONS
                       ")?") R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

constexpr std::string_view kDefault[] = {
    R"([\p{P}\$\+<=>\^~\|]+)",
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))",
    R"(\p{N}+)",
    R"([0-9][0-9][0-9])",
};
constexpr std::string_view kGpt2List[] = {kGpt2};
// SmolLM2's published pipeline: Digits(individual_digits=True), then ByteLevel's GPT-2 split.
constexpr std::string_view kSmollm[] = {kDigit, kGpt2};
constexpr std::string_view kLlama3List[] = {kLlama3};
constexpr std::string_view kQwen2List[] = {kQwen2};
constexpr std::string_view kQwen35[] = {
    FLUORO_CONTRACTIONS R"(|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}|)"
                        R"( ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"};
constexpr std::string_view kDeepseekLlm[] = {
    "[\r\n]",
    // Latin, Greek, Cyrillic, Armenian, Georgian, Cherokee and other cased letters.
    "\\s?[A-Za-z\u00b5\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u01ba\u01bc-\u01bf\u01c4-\u0293"
    "\u0295-\u02af\u0370-\u0373\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c"
    "\u038e-\u03a1\u03a3-\u03f5\u03f7-\u0481\u048a-\u052f\u0531-\u0556\u10a0-\u10c5"
    "\u13a0-\u13f5\u13f8-\u13fd\u1c90-\u1cba\u1cbd-\u1cbf\u1d00-\u1d2b\u1d6b-\u1d77"
    "\u1d79-\u1d9a\u1e00-\u1f15\u1f18-\u1f1d\u1f20-\u1f45\u1f48-\u1f4d\u1f50-\u1f57\u1f59"
    "\u1f5b\u1f5d\u1f5f-\u1f7d\u1f80-\u1fb4\u1fb6-\u1fbc\u1fbe\u1fc2-\u1fc4\u1fc6-\u1fcc"
    "\u1fd0-\u1fd3\u1fd6-\u1fdb\u1fe0-\u1fec\u1ff2-\u1ff4\u1ff6-\u1ffc\u2102\u2107"
    "\u210a-\u2113\u2115\u2119-\u211d\u2124\u2126\u2128\u212a-\u212d\u212f-\u2134\u2139"
    "\u213c-\u213f\u2145-\u2149\u214e\u2183\u2184\u2c00-\u2c7b\u2c7e-\u2ce4\u2ceb-\u2cee"
    "\u2cf2\u2cf3\ua640-\ua66d\ua680-\ua69b\ua722-\ua76f\ua771-\ua787\ua78b-\ua78e"
    "\uab70-\uabbf\ufb00-\ufb06\ufb13-\ufb17\uff21-\uff3a\uff41-\uff5a\U00010400-\U0001044f"
    "\U000104b0-\U000104d3\U000104d8-\U000104fb\U00010c80-\U00010cb2\U00010cc0-\U00010cf2"
    "\U000118a0-\U000118df\U0001e900-\U0001e943]+",
    "\\s?[!-/:-~\uff01-\uff0f\uff1a-\uff5e\u2018-\u201f\u3000-\u3002]+",
    R"(\s+$)",
    "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+",
    R"(\p{N}+)",
};
constexpr std::string_view kDeepseekCoder[] = {
    "[\r\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)", "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+", kDigit,
};
constexpr std::string_view kDeepseek3[] = {kDigits3, kCjkKana, kDeepseek3Words};
constexpr std::string_view kSpark25[] = {
    kDigits3,
    kCjkKana,
    R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+|)"
    R"( ?[\p{P}\p{S}]+|[\r\n]|\s+(?!\S)|\s+)",
    kDigit,
};
constexpr std::string_view kYoutu[] = {
    "[\uac00-\ud7a3\u3131-\u318e]+|[\uff01\u2026\u201c\u201d\u2018\u2019\u2014\uff1a\uff1b\uff0c"
    "\u3001-\u303f\ufe30-\ufe4f]+|[\u3105-\u312f]+|[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
    FLUORO_CASED_WORDS(FLUORO_UPPER, FLUORO_LOWER,
                       "(?:" FLUORO_CONTRACTIONS
                       ")?") R"(|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
};
constexpr std::string_view kFalcon[] = {
    R"([\p{P}\$\+<=>\^~\|`]+)",
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))",
    R"([0-9][0-9][0-9])",
};
constexpr std::string_view kBloomList[] = {kBloom};
constexpr std::string_view kViking[] = {kBloom, kDigit};
// Mistral's tekken as published (llama.cpp rewrites the case classes with lookaheads that only
// tell ASCII case apart; PCRE2 has the real Unicode properties).
constexpr std::string_view kTekken[] = {
    FLUORO_CASED_WORDS(FLUORO_UPPER, FLUORO_LOWER,
                       "") R"(|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)"};
constexpr std::string_view kChameleon[] = {
    R"(<sentinel:[0-9]+>)",
    R"((IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z)",
    R"(([\t\n]|    |  ))",
    kDigit,
    R"([\p{P}!-/:-@\[-`{-~])",
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))",
};
constexpr std::string_view kGpt4oList[] = {kGpt4o};
constexpr std::string_view kTinyAya[] = {kDigitsFromRight, kGpt4o};
// Kimi K2's pattern with its "[...&&[^\p{Han}]]" intersections written as negative lookaheads.
constexpr std::string_view kKimiK2[] = {R"(\p{Han}+|)" FLUORO_CASED_WORDS(
    R"((?:(?!\p{Han})[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]))",
    R"((?:(?!\p{Han})[\p{Ll}\p{Lm}\p{Lo}\p{M}]))",
    "(?:" FLUORO_CONTRACTIONS
    ")?") R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"};
// "\p{N}+" then "(?=(\d{3})+(?!\d))": the second matches only empty strings, which cut a number
// into groups of three from the right.
constexpr std::string_view kSuperbpe[] = {R"(\p{N}+)", R"((?=(\d{3})+(?!\d)))"};
constexpr std::string_view kBailingmoe[] = {
    R"('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|)"
    R"( ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)"};
constexpr std::string_view kSeedCoder[] = {
    FLUORO_CONTRACTIONS R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|)"
                        R"(\s*[\r\n]+|\s+(?!\S)|\s+)"};
constexpr std::string_view kUfakzeka[] = {R"([^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|)" FLUORO_TAIL};
constexpr std::string_view kJais2[] = {
    FLUORO_CONTRACTIONS
    R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|)"
    R"(\s*[\r\n]+|\s{512}(?!\S)|\s{256}(?!\S)|\s{128}(?!\S)|\s{64}(?!\S)|\s{32}(?!\S)|)"
    R"(\s{16}(?!\S)|\s{8}(?!\S)|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1})"};
constexpr std::string_view kAfmoe[] = {
    kDigitsFromRight,
    "[\u4e00-\u9fff\u3400-\u4dbf\uf900-\ufaff\u3040-\u309f\u30a0-\u30ff\uff65-\uff9f"
    "\u2f00-\u2fdf\u0e00-\u0e7f\u0e80-\u0eff\u1780-\u17ff\u1000-\u109f\uaa60-\uaa7f"
    "\ua9e0-\ua9ff\uac00-\ud7af\u1100-\u11ff]+",
    kDeepseek3Words,
};
constexpr std::string_view kLaguna[] = {R"([^\n]+|[\n]+)", kQwen2};
constexpr std::string_view kExaoneMoe[] = {
    FLUORO_CONTRACTIONS R"(|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}|)"
                        R"( ?[^\s\p{L}\p{N}]+[\r\n/]?|\s*[\r\n]|\s+(?!\S)|\s+)"};
constexpr std::string_view kMinicpm5[] = {
    kDigits3, FLUORO_CONTRACTIONS R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+|)" FLUORO_TAIL};
// Gemma 4 merges over whole lines ("▁" already stands for the spaces); only newline runs split.
constexpr std::string_view kGemma4[] = {R"([^\n]+|[\n]+)"};

#undef FLUORO_CASED_WORDS
#undef FLUORO_LOWER
#undef FLUORO_UPPER
#undef FLUORO_TAIL
#undef FLUORO_CONTRACTIONS

}  // namespace

const PreTokenizerSpec* find_pre_tokenizer(std::string_view name) {
    const auto* it = std::find_if(std::begin(kPreTokenizers), std::end(kPreTokenizers),
                                  [&](const PreTokenizerSpec& s) { return s.name == name; });
    return it == std::end(kPreTokenizers) ? nullptr : it;
}

std::span<const PreTokenizerSpec> pre_tokenizer_specs() {
    return kPreTokenizers;
}

std::string_view pre_tokenizer_name(PreTokenizer pre) {
    for (const PreTokenizerSpec& s : kPreTokenizers)
        if (s.family == pre) return s.name;
    return "default";
}

bool pre_tokenizer_is_raw_utf8(PreTokenizer pre) {
    return pre == PreTokenizer::Gemma4 || pre == PreTokenizer::SarvamMoe;
}

std::span<const std::string_view> pre_tokenizer_patterns(PreTokenizer pre) {
    switch (pre) {
        case F::Default:
            return kDefault;
        case F::Gpt2:
            return kGpt2List;
        case F::Smollm:
            return kSmollm;
        case F::Llama3:
            return kLlama3List;
        case F::Qwen2:
            return kQwen2List;
        case F::Qwen35:
            return kQwen35;
        case F::DeepseekLlm:
            return kDeepseekLlm;
        case F::DeepseekCoder:
            return kDeepseekCoder;
        case F::Deepseek3:
            return kDeepseek3;
        case F::Spark25:
            return kSpark25;
        case F::Youtu:
            return kYoutu;
        case F::Falcon:
            return kFalcon;
        case F::Bloom:
            return kBloomList;
        case F::Viking:
            return kViking;
        case F::Tekken:
            return kTekken;
        case F::Chameleon:
            return kChameleon;
        case F::Gpt4o:
            return kGpt4oList;
        case F::GraniteEmbMulti:  // llama.cpp adds \p{M} to its ASCII-case lookaheads; ours
            return kGpt4oList;    // have the real classes, which hold \p{M} already
        case F::TinyAya:
            return kTinyAya;
        case F::KimiK2:
            return kKimiK2;
        case F::Superbpe:
            return kSuperbpe;
        case F::Bailingmoe:
            return kBailingmoe;
        case F::SeedCoder:
            return kSeedCoder;
        case F::Ufakzeka:
            return kUfakzeka;
        case F::Jais2:
            return kJais2;
        case F::Afmoe:
            return kAfmoe;
        case F::Laguna:
            return kLaguna;
        case F::ExaoneMoe:
            return kExaoneMoe;
        case F::Minicpm5:
            return kMinicpm5;
        case F::Gemma4:
        case F::SarvamMoe:
            return kGemma4;
    }
    return kDefault;
}

}  // namespace fluoro::tok
