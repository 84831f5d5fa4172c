// StreamingDecoder: characters split across tokens are held until complete; output is always
// valid UTF-8 and concatenates to decode().
#include <gtest/gtest.h>

#include "core/error.h"
#include "engine/tokenizer/tiny_vocabs.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace fluoro::tok {
namespace {

using Ids = std::vector<int32_t>;

Tokenizer spm() {
    return Tokenizer(Vocab::build(test::spm_data({{"a", -1}, {"b", -1}})));
}

int32_t byte(uint8_t b) {
    return 5 + b;
}  // spm_data's <0xNN> ids

std::string stream(const Tokenizer& t, const Ids& ids, std::vector<std::string>* parts = nullptr) {
    StreamingDecoder d(t, true);
    std::string all;
    for (int32_t id : ids) {
        std::string s = d.push(id);
        EXPECT_FALSE(utf8::find_invalid(s).has_value());
        if (parts) parts->push_back(s);
        all += s;
    }
    all += d.flush();
    return all;
}

TEST(StreamingDecoder, HoldsAMultiByteCharacterUntilComplete) {
    const Tokenizer t = spm();
    std::vector<std::string> parts;
    // "a😀b" with the emoji as four byte-fallback tokens F0 9F 98 80.
    const Ids ids = {t.vocab().find("a"), byte(0xF0), byte(0x9F),
                     byte(0x98),          byte(0x80), t.vocab().find("b")};
    EXPECT_EQ(stream(t, ids, &parts),
              "a\xF0\x9F\x98\x80"
              "b");
    EXPECT_EQ(parts, (std::vector<std::string>{"a", "", "", "", "\xF0\x9F\x98\x80", "b"}));
}

TEST(StreamingDecoder, ZwjSequencePassesThroughCharacterByCharacter) {
    const Tokenizer t = spm();
    // 👩‍💻 = U+1F469 U+200D U+1F4BB, all as byte tokens.
    const std::string text = "\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x92\xBB";
    Ids ids;
    for (unsigned char c : text) ids.push_back(byte(c));
    std::vector<std::string> parts;
    EXPECT_EQ(stream(t, ids, &parts), text);
    EXPECT_EQ(parts[3], "\xF0\x9F\x91\xA9");
    EXPECT_EQ(parts[6], "\xE2\x80\x8D");
}

TEST(StreamingDecoder, ByteLevelBpeSplitCharacter) {
    // Byte-level tokens holding the first and last two bytes of "€" (E2 82 AC).
    VocabData d = test::bpe_data({}, {});
    d.tokens.push_back(test::bl("\xE2"));
    d.tokens.push_back(test::bl("\x82\xAC"));
    d.types.resize(d.tokens.size(), TokenType::Normal);
    const Tokenizer t(Vocab::build(std::move(d)));
    const int32_t n = t.vocab().size();
    std::vector<std::string> parts;
    EXPECT_EQ(stream(t, {n - 2, n - 1}, &parts), "\xE2\x82\xAC");
    EXPECT_EQ(parts, (std::vector<std::string>{"", "\xE2\x82\xAC"}));
}

TEST(StreamingDecoder, InvalidBytesBecomeReplacementCharacters) {
    const Tokenizer t = spm();
    StreamingDecoder d(t, false);
    EXPECT_EQ(d.push(byte(0xFF)), "\xEF\xBF\xBD");
    EXPECT_EQ(d.push(byte(0xE2)), "");
    EXPECT_EQ(d.held_bytes(), 1u);
    EXPECT_EQ(d.push(t.vocab().find("a")),
              "\xEF\xBF\xBD"
              "a");  // E2 then 'a': never completes
    EXPECT_EQ(d.push(byte(0xF0)), "");
    EXPECT_EQ(d.flush(), "\xEF\xBF\xBD");  // truncated at end of stream
    EXPECT_EQ(d.held_bytes(), 0u);
}

TEST(StreamingDecoder, MatchesDecodeAndRespectsRenderSpecial) {
    const Tokenizer t = spm();
    const Ids ids = {1, t.vocab().find("a"), 3, byte(0xC3), byte(0xA9), 2};
    EXPECT_EQ(stream(t, ids), t.decode(ids, true));
    StreamingDecoder quiet(t, false);
    std::string out;
    for (int32_t id : ids) out += quiet.push(id);
    EXPECT_EQ(out + quiet.flush(), t.decode(ids, false));
    EXPECT_EQ(out, "a\xC3\xA9");
}

TEST(StreamingDecoder, OutOfRangeIdIsAnErrorAndConsumesNothing) {
    const Tokenizer t = spm();
    StreamingDecoder d(t, true);
    EXPECT_EQ(d.push(byte(0xC3)), "");
    EXPECT_THROW(d.push(t.vocab().size()), Error);
    EXPECT_THROW(d.push(-7), Error);
    EXPECT_EQ(d.push(byte(0xA9)), "\xC3\xA9");
}

TEST(StreamingDecoder, ResetDropsHeldBytes) {
    const Tokenizer t = spm();
    StreamingDecoder d(t, true);
    EXPECT_EQ(d.push(byte(0xC3)), "");
    d.reset();
    EXPECT_EQ(d.held_bytes(), 0u);
    EXPECT_EQ(d.push(t.vocab().find("b")), "b");
}

}  // namespace
}  // namespace fluoro::tok
