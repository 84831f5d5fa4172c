#include "tokenizer/wordpiece.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <locale.h>
#include <array>
#include <clocale>
#include <cwctype>
#include <string>

#include "core/error.h"
#include "tokenizer/unicode_nfd.h"
#include "tokenizer/utf8.h"

namespace fluoro::tok {

namespace {

constexpr std::string_view kWordStart = "\xe2\x96\x81";  // U+2581, the converter's word marker

// Unicode's White_Space property.
bool is_space(char32_t c) {
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

// The CJK ideograph blocks BERT's tokenizer isolates, as HuggingFace's code has them (its range
// from 0x2B920, not 0x2B820, kept: that is what the models were trained with).
bool is_cjk(char32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
           (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
           (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

enum Class : uint8_t { kOther, kPunct, kSymbol, kControl, kMark };

}  // namespace

// One compiled pattern whose capture group tells the category of the code point it is matched
// against: \p{P}, \p{S}, or control (Cc, Cf, Co, Cs - not Cn, unassigned, which llama.cpp keeps).
struct WordPiece::Classes {
    pcre2_code* code = nullptr;
    std::array<Class, 128> ascii{};
    locale_t utf8 = nullptr;  // for towlower_l

    Classes() {
        static constexpr char kPattern[] =
            "(\\p{P})|(\\p{S})|(\\p{Cc}|\\p{Cf}|\\p{Co}|\\p{Cs})|(\\p{Mn})";
        int err = 0;
        PCRE2_SIZE at = 0;
        code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kPattern), PCRE2_ZERO_TERMINATED,
                             PCRE2_UTF | PCRE2_UCP | PCRE2_ANCHORED, &err, &at, nullptr);
        if (!code) throw Error("tokenizer: the WordPiece character classes did not compile");
        pcre2_match_data* md = pcre2_match_data_create_from_pattern(code, nullptr);
        for (char32_t c = 0; c < 128; ++c) ascii[c] = classify_slow(c, md);
        pcre2_match_data_free(md);
        utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", nullptr);
    }
    ~Classes() {
        pcre2_code_free(code);
        if (utf8) freelocale(utf8);
    }
    Class classify_slow(char32_t c, pcre2_match_data* md) const {
        std::string s;
        utf8::append(s, c);
        const int rc = pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), 0,
                                   PCRE2_NO_UTF_CHECK, md, nullptr);
        if (rc <= 0) return kOther;
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
        for (int g = 1; g <= 4; ++g)
            if (ov[2 * g] != PCRE2_UNSET) return Class(g);
        return kOther;
    }
    Class classify(char32_t c, pcre2_match_data* md) const {
        return c < 128 ? ascii[c] : classify_slow(c, md);
    }
    char32_t lower(char32_t c) const {
        if (c < 128) return c >= 'A' && c <= 'Z' ? c + 32 : c;
        if (!utf8) throw Error("tokenizer: lowercasing needs the C.UTF-8 locale, which is missing");
        return char32_t(towlower_l(wint_t(c), utf8));
    }
};

WordPiece::WordPiece(const Vocab& vocab) : classes_(std::make_unique<Classes>()) {
    for (int32_t id = 0; id < vocab.size(); ++id)
        max_token_bytes_ = std::max(max_token_bytes_, vocab.text(id).size());
}
WordPiece::~WordPiece() = default;
WordPiece::WordPiece(WordPiece&&) noexcept = default;
WordPiece& WordPiece::operator=(WordPiece&&) noexcept = default;

void WordPiece::encode(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out) const {
    struct MatchData {  // this call's, so calls on other threads do not share it
        pcre2_match_data* md;
        explicit MatchData(const pcre2_code* code)
            : md(pcre2_match_data_create_from_pattern(code, nullptr)) {}
        ~MatchData() { pcre2_match_data_free(md); }
    } match(classes_->code);
    // Words, each with the marker in front.
    std::vector<std::string> words(1, std::string(kWordStart));
    const auto finish_word = [&] {
        if (words.back().size() > kWordStart.size()) words.emplace_back(kWordStart);
    };
    std::u32string cps;  // the text's code points, decomposed when accents are stripped
    for (size_t i = 0; i < text.size();) {
        const char32_t c = utf8::decode(text, i);
        if (vocab.strip_accents())
            append_nfd(c, cps);
        else
            cps += c;
    }
    for (const char32_t c : cps) {
        if (is_space(c)) {
            finish_word();
            continue;
        }
        const Class k = classes_->classify(c, match.md);
        if (c == 0 || c == 0xFFFD || k == kControl) continue;
        if (k == kMark && vocab.strip_accents()) continue;
        const char32_t l = vocab.lowercase() ? classes_->lower(c) : c;
        if (k == kPunct || (c < 0x7F && k == kSymbol) || is_cjk(c)) {
            finish_word();
            utf8::append(words.back(), l);
            words.emplace_back(kWordStart);
        } else {
            utf8::append(words.back(), l);
        }
    }
    for (const std::string& w : words) {
        if (w.size() == kWordStart.size()) continue;  // empty
        const size_t start = out.size();
        bool spelled = true;
        for (size_t i = 0; i < w.size() && spelled;) {
            spelled = false;
            for (size_t j = std::min(w.size(), i + max_token_bytes_); j > i; --j) {
                const int32_t id = vocab.find(std::string_view(w).substr(i, j - i));
                if (id != kNoToken) {
                    out.push_back(id);
                    i = j;
                    spelled = true;
                    break;
                }
            }
        }
        if (!spelled) {  // one unspellable part: the whole word is unknown
            out.resize(start);
            out.push_back(vocab.unk());
        }
    }
}

}  // namespace fluoro::tok
