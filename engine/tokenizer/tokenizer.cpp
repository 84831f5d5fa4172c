#include "tokenizer/tokenizer.h"

#include <cstdio>
#include <optional>

#include "core/error.h"
#include "tokenizer/bpe.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/spm.h"
#include "tokenizer/utf8.h"
#include "tokenizer/wordpiece.h"

namespace fluoro::tok {

namespace {

constexpr std::string_view kSpaceMarker = "\xe2\x96\x81";  // U+2581 "▁"

std::vector<int32_t> user_defined_ids(const Vocab& v) {
    std::vector<int32_t> ids;
    for (int32_t id : v.special_ids())
        if (v.type(id) == TokenType::UserDefined) ids.push_back(id);
    return ids;
}

// Spaces as "▁" (SentencePiece and Gemma 4 vocabularies spell them so).
void append_escaped(std::string_view text, std::string& out) {
    for (char c : text) {
        if (c == ' ') {
            out += kSpaceMarker;
        } else {
            out.push_back(c);
        }
    }
}

void append_unescaped(std::string_view text, std::string& out) {
    size_t pos = 0;
    for (size_t hit; (hit = text.find(kSpaceMarker, pos)) != std::string_view::npos;) {
        out.append(text.substr(pos, hit - pos));
        out.push_back(' ');
        pos = hit + kSpaceMarker.size();
    }
    out.append(text.substr(pos));
}

// "<0xNN>" -> NN, or -1.
int parse_byte_token(std::string_view t) {
    if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>') return -1;
    auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        return -1;
    };
    const int hi = hex(t[3]), lo = hex(t[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

}  // namespace

// Buffers reused across the fragments of one encode() call.
struct Tokenizer::EncodeScratch {
    explicit EncodeScratch(const Vocab& v) : bpe(v), spm(v) {}
    BpeSession bpe;
    SpmSession spm;
    std::vector<TextSpan> pieces, split_scratch;
    std::string text;
};

Tokenizer::Tokenizer(Vocab vocab)
    : vocab_(std::move(vocab)),
      all_specials_(vocab_, vocab_.special_ids()),
      user_defined_(vocab_, user_defined_ids(vocab_)) {
    if (vocab_.model() == TokenizerModel::Bpe)
        splitter_ = std::make_unique<RegexSplitter>(pre_tokenizer_patterns(vocab_.pre_tokenizer()));
    if (vocab_.model() == TokenizerModel::Wpm) wordpiece_ = std::make_unique<WordPiece>(vocab_);
}

Tokenizer Tokenizer::from_gguf(const gguf::GgufFile& file) {
    return Tokenizer(load_vocab(file));
}

Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special,
                                       bool parse_special) const {
    return encode(text, {}, add_special, parse_special);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, std::span<const TextSpan> literal,
                                       bool add_special, bool parse_special) const {
    if (const auto bad = utf8::find_invalid(text)) {
        char byte[8];
        std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(text[*bad]));
        throw Error("tokenizer: input is not valid UTF-8 at byte offset " + std::to_string(*bad) +
                    " (byte " + byte + ")");
    }
    size_t prev_end = 0;
    for (const TextSpan& r : literal) {
        if (r.offset < prev_end || r.offset + r.length > text.size())
            throw Error("tokenizer: literal ranges must be sorted, disjoint and inside the text");
        prev_end = r.offset + r.length;
    }
    std::vector<int32_t> out;
    out.reserve(text.size() / 3 + 2);
    if (add_special && vocab_.add_bos()) out.push_back(vocab_.bos());

    // The next special token at or after `from`, leftmost then longest as in the one-matcher
    // case. User-defined tokens match anywhere, even across a range's edge (a content's trailing
    // "\n" and the markup's "\n\n" make Gemma's "\n\n\n", as in a whole-text encode); the other
    // special tokens only in the text outside the ranges, segment by segment.
    const SpecialMatcher& specials = parse_special ? all_specials_ : user_defined_;
    size_t next_range = 0;
    const auto find_outside = [&](size_t from) -> std::optional<SpecialMatcher::Match> {
        while (from < text.size()) {
            while (next_range < literal.size() &&
                   literal[next_range].offset + literal[next_range].length <= from)
                ++next_range;
            if (next_range < literal.size() && literal[next_range].offset <= from) {
                from = literal[next_range].offset + literal[next_range].length;
                continue;
            }
            const size_t seg_end =
                next_range == literal.size() ? text.size() : literal[next_range].offset;
            if (auto hit = specials.find(text.substr(0, seg_end), from)) return hit;
            from = seg_end;
        }
        return std::nullopt;
    };
    std::optional<SpecialMatcher::Match> user_hit;  // cached: the next user-defined match
    bool user_done = literal.empty();               // without ranges `specials` finds them all
    const auto find_special = [&](size_t from) -> std::optional<SpecialMatcher::Match> {
        auto hit = find_outside(from);
        if (user_done) return hit;
        if (!user_hit || user_hit->pos < from) {
            user_hit = user_defined_.find(text, from);
            if (!user_hit) user_done = true;
        }
        if (!user_hit) return hit;
        if (!hit || user_hit->pos < hit->pos ||
            (user_hit->pos == hit->pos && user_hit->len > hit->len))
            return user_hit;
        return hit;
    };

    EncodeScratch scratch(vocab_);
    bool after_special = true;  // the start of the text counts as following a special token
    size_t pos = 0;
    while (pos < text.size()) {
        const auto match = find_special(pos);
        const size_t end = match ? match->pos : text.size();
        if (end > pos) {
            encode_fragment(text.substr(pos, end - pos), after_special, scratch, out);
            after_special = false;
        }
        if (!match) break;
        out.push_back(match->id);
        after_special = true;
        pos = match->pos + match->len;
    }

    if (add_special && vocab_.add_eos()) out.push_back(vocab_.eos());
    if (add_special && wordpiece_ && vocab_.sep() != kNoToken) out.push_back(vocab_.sep());
    return out;
}

void Tokenizer::encode_fragment(std::string_view fragment, bool after_special,
                                EncodeScratch& scratch, std::vector<int32_t>& out) const {
    std::string& buf = scratch.text;
    buf.clear();
    if (wordpiece_) return wordpiece_->encode(vocab_, fragment, out);
    if (vocab_.model() == TokenizerModel::Bpe) {
        if (!vocab_.byte_level()) {  // raw UTF-8 (Gemma 4): spaces are "▁" before splitting
            append_escaped(fragment, buf);
            splitter_->split(buf, scratch.pieces, scratch.split_scratch);
            for (const TextSpan& p : scratch.pieces)
                scratch.bpe.encode_piece(std::string_view(buf).substr(p.offset, p.length), out);
            return;
        }
        splitter_->split(fragment, scratch.pieces, scratch.split_scratch);
        for (const TextSpan& p : scratch.pieces) {
            buf.clear();
            byte_level_encode(fragment.substr(p.offset, p.length), buf);
            scratch.bpe.encode_piece(buf, out);
        }
        return;
    }
    // SentencePiece: optional dummy prefix, then every space becomes "▁".
    if (vocab_.add_space_prefix() && after_special) buf += kSpaceMarker;
    append_escaped(fragment, buf);
    scratch.spm.encode(buf, out);
}

void Tokenizer::append_piece(int32_t id, bool render_special, std::string& out) const {
    if (!vocab_.contains(id))
        throw Error("tokenizer: token id " + std::to_string(id) +
                    " is out of range (vocabulary has " + std::to_string(vocab_.size()) +
                    " tokens)");
    const std::string_view text = vocab_.text(id);
    switch (vocab_.type(id)) {
        case TokenType::Control:
        case TokenType::Unknown:
            if (render_special) out.append(text);
            return;
        case TokenType::UserDefined:
            out.append(text);
            return;
        case TokenType::Byte:
            if (const int b = parse_byte_token(text); b >= 0) {
                out.push_back(static_cast<char>(b));
                return;
            }
            break;  // not spelled <0xNN>: decode like a normal token
        case TokenType::Normal:
        case TokenType::Unused:
        case TokenType::Undefined:
            break;
    }
    if (vocab_.model() == TokenizerModel::Bpe && vocab_.byte_level()) {
        byte_level_decode(text, out);
    } else {
        append_unescaped(text, out);
    }
}

std::string Tokenizer::token_to_piece(int32_t id, bool render_special) const {
    std::string out;
    append_piece(id, render_special, out);
    return out;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool render_special) const {
    std::string out;
    bool at_start = true;
    for (int32_t id : ids) append_decoded(id, render_special, at_start, out);
    return out;
}

void Tokenizer::append_decoded(int32_t id, bool render_special, bool& at_start,
                               std::string& out) const {
    const size_t before = out.size();
    append_piece(id, render_special, out);
    const TokenType t = vocab_.type(id);
    if (!at_start || t == TokenType::Control || t == TokenType::Unknown) return;
    // The first text token carries the dummy prefix encode() added (SentencePiece) or the word
    // marker (WordPiece's "▁"); the decoder drops it.
    if ((vocab_.add_space_prefix() || wordpiece_) && out.size() > before && out[before] == ' ')
        out.erase(before, 1);
    at_start = false;
}

// ---------------------------------------------------------------------------------------------

StreamingDecoder::StreamingDecoder(const Tokenizer& tokenizer, bool render_special)
    : tokenizer_(&tokenizer), render_special_(render_special) {}

std::string StreamingDecoder::push(int32_t id) {
    tokenizer_->append_decoded(id, render_special_, at_start_, pending_);
    return take_complete(false);
}

std::string StreamingDecoder::flush() {
    std::string out = take_complete(true);
    at_start_ = true;
    return out;
}

void StreamingDecoder::reset() {
    pending_.clear();
    at_start_ = true;
}

std::string StreamingDecoder::take_complete(bool at_end) {
    static constexpr std::string_view kReplacement = "\xef\xbf\xbd";  // U+FFFD
    std::string out;
    size_t i = 0;
    while (i < pending_.size()) {
        size_t len = 0;
        const utf8::SeqStatus s = utf8::classify(pending_, i, len);
        if (s == utf8::SeqStatus::Complete) {
            out.append(pending_, i, len);
        } else if (s == utf8::SeqStatus::Invalid || at_end) {
            out += kReplacement;
        } else {
            break;  // incomplete: wait for the next token
        }
        i += len;
    }
    pending_.erase(0, i);
    return out;
}

}  // namespace fluoro::tok
