#include "tokenizer/pre_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <string>

#include "core/error.h"

namespace fluoro::tok {

struct RegexSplitter::Compiled {
    pcre2_code* code = nullptr;
    std::string pattern;
    ~Compiled() { pcre2_code_free(code); }
};

namespace {

// Unicode's White_Space property, which HuggingFace tokenizers' regexes (Oniguruma) and llama.cpp
// mean by \s. PCRE2's \s with UCP also matches U+180E MONGOLIAN VOWEL SEPARATOR (no longer a
// space since Unicode 6.3), which would merge or split pieces differently, so every \s and \S is
// rewritten to this explicit class before compiling.
constexpr std::string_view kWhiteSpace = R"(\t\n\x{0B}\f\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A})"
                                         R"(\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})";

std::string with_unicode_white_space(std::string_view pattern) {
    std::string out;
    bool in_class = false;
    for (size_t i = 0; i < pattern.size(); ++i) {
        const char c = pattern[i];
        if (c == '\\' && i + 1 < pattern.size()) {
            const char e = pattern[++i];
            if (e == 's') {
                out += in_class ? std::string(kWhiteSpace) : "[" + std::string(kWhiteSpace) + "]";
            } else if (e == 'S' && !in_class) {
                out += "[^" + std::string(kWhiteSpace) + "]";
            } else {
                out += c;
                out += e;
            }
            continue;
        }
        if (c == '[' && !in_class) {
            in_class = true;
        } else if (c == ']' && in_class) {
            in_class = false;
        }
        out += c;
    }
    return out;
}

std::string pcre2_message(int code) {
    PCRE2_UCHAR buf[256];
    pcre2_get_error_message(code, buf, sizeof buf);
    return reinterpret_cast<const char*>(buf);
}

struct MatchData {
    pcre2_match_data* md;
    explicit MatchData(const pcre2_code* code)
        : md(pcre2_match_data_create_from_pattern(code, nullptr)) {
        if (!md) throw Error("tokenizer: out of memory creating PCRE2 match data");
    }
    ~MatchData() { pcre2_match_data_free(md); }
    MatchData(const MatchData&) = delete;
    MatchData& operator=(const MatchData&) = delete;
};

}  // namespace

RegexSplitter::RegexSplitter(std::span<const std::string_view> patterns) {
    for (std::string_view p : patterns) {
        auto c = std::make_unique<Compiled>();
        c->pattern = std::string(p);
        const std::string expanded = with_unicode_white_space(p);
        int err = 0;
        PCRE2_SIZE err_at = 0;
        c->code =
            pcre2_compile(reinterpret_cast<PCRE2_SPTR>(expanded.data()), expanded.size(),
                          PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &err, &err_at, nullptr);
        if (!c->code)
            throw Error("tokenizer: pre-tokenizer regex /" + c->pattern + "/ does not compile at " +
                        std::to_string(err_at) + ": " + pcre2_message(err));
        pcre2_jit_compile(c->code, PCRE2_JIT_COMPLETE);  // failure leaves the interpreter
        regexes_.push_back(std::move(c));
    }
}

RegexSplitter::RegexSplitter(RegexSplitter&&) noexcept = default;
RegexSplitter& RegexSplitter::operator=(RegexSplitter&&) noexcept = default;
RegexSplitter::~RegexSplitter() = default;

void RegexSplitter::split(std::string_view text, std::vector<TextSpan>& pieces,
                          std::vector<TextSpan>& scratch) const {
    pieces.clear();
    if (text.empty()) return;
    pieces.push_back({0, text.size()});
    for (const auto& re : regexes_) {
        MatchData data(re->code);
        scratch.clear();
        for (const TextSpan piece : pieces) {
            const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data() + piece.offset);
            size_t pos = 0;   // next search start, relative to the piece
            size_t kept = 0;  // end of what has been emitted
            while (pos < piece.length) {
                // The text was validated once by encode(); skip PCRE2's per-call full check,
                // which would make splitting quadratic.
                const int rc = pcre2_match(re->code, subject, piece.length, pos, PCRE2_NO_UTF_CHECK,
                                           data.md, nullptr);
                if (rc == PCRE2_ERROR_NOMATCH) break;
                if (rc < 0)
                    throw Error("tokenizer: pre-tokenizer regex /" + re->pattern +
                                "/ failed: " + pcre2_message(rc));
                const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(data.md);
                const size_t start = ov[0], end = ov[1];
                if (end == start) {
                    // An empty match cuts the text there (superbpe's digit groups), then the
                    // search steps one character on.
                    if (start > kept) {
                        scratch.push_back({piece.offset + kept, start - kept});
                        kept = start;
                    }
                    pos = start + 1;
                    while (pos < piece.length && (subject[pos] & 0xC0) == 0x80) ++pos;
                    continue;
                }
                if (start > kept) scratch.push_back({piece.offset + kept, start - kept});
                scratch.push_back({piece.offset + start, end - start});
                kept = pos = end;
            }
            if (kept < piece.length) scratch.push_back({piece.offset + kept, piece.length - kept});
        }
        pieces.swap(scratch);
    }
}

}  // namespace fluoro::tok
