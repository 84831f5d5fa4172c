#include "tokenizer/byte_level.h"

#include <array>

#include "tokenizer/utf8.h"

namespace fluoro::tok {

namespace {

constexpr char32_t kFirstShifted = 0x100;  // where the 68 unprintable bytes start
constexpr size_t kDecodeTableSize = 0x100 + 68;

bool maps_to_itself(unsigned b) {
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct Tables {
    std::array<char32_t, 256> to_cp{};
    std::array<std::string, 256> to_text;
    std::array<int16_t, kDecodeTableSize> to_byte{};  // code point -> byte, -1 if none

    Tables() {
        to_byte.fill(-1);
        char32_t next = kFirstShifted;
        for (unsigned b = 0; b < 256; ++b) {
            to_cp[b] = maps_to_itself(b) ? char32_t(b) : next++;
            utf8::append(to_text[b], to_cp[b]);
            to_byte[to_cp[b]] = static_cast<int16_t>(b);
        }
    }
};

const Tables& tables() {
    static const Tables t;
    return t;
}

}  // namespace

std::string_view byte_level_char(uint8_t byte) {
    return tables().to_text[byte];
}

void byte_level_encode(std::string_view raw, std::string& out) {
    const Tables& t = tables();
    for (char c : raw) out += t.to_text[static_cast<unsigned char>(c)];
}

void byte_level_decode(std::string_view text, std::string& out) {
    const Tables& t = tables();
    size_t i = 0;
    while (i < text.size()) {
        const size_t start = i;
        const char32_t cp = utf8::decode(text, i);
        if (cp < kDecodeTableSize && t.to_byte[cp] >= 0) {
            out.push_back(static_cast<char>(t.to_byte[cp]));
        } else {
            out.append(text.substr(start, i - start));
        }
    }
}

}  // namespace fluoro::tok
