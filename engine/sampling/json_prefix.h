// A byte-level recognizer of JSON prefixes (RFC 8259): fed one byte at a time, it says whether
// the bytes so far can still be extended into one complete JSON object, and whether they already
// are one. The state is a small value (a fixed-depth container stack and a few counters), cheap
// to copy, so a caller can try a token's bytes on a copy and keep or drop the result — what
// constrained decoding (decode/json_constraint.h) does for every token of the vocabulary at every
// step.
//
// What it accepts: exactly one top-level object ({...}: OpenAI's response_format json_object),
// with whitespace around tokens; strings with the JSON escapes (\" \\ \/ \b \f \n \r \t, \u and
// four hex digits) and no raw control characters (bytes >= 0x80 pass: UTF-8 is not validated);
// numbers per the grammar (no leading zeros, no lone '-', '.' or exponent without digits);
// true / false / null. Two limits keep a model from wandering: containers nest at most kMaxDepth
// deep, and at most kMaxWhitespace whitespace bytes may follow one another.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace fluoro {

class JsonPrefix {
  public:
    static constexpr int kMaxDepth = 32;
    static constexpr int kMaxWhitespace = 16;

    // Feeds one byte; false (and the state unchanged) when no JSON object starts with the bytes
    // so far followed by this one.
    bool feed(uint8_t c);
    // Feeds every byte; false at the first one refused (the state then holds the bytes before it).
    bool feed(std::string_view bytes);
    // The bytes so far are one complete object (whitespace after it allowed, nothing else).
    bool complete() const { return mode_ == Mode::Done; }
    // Inside a string, outside an escape: any byte but '"', '\\' and control bytes leaves the
    // state as it is.
    bool in_string() const { return mode_ == Mode::String; }

  private:
    enum class Mode : uint8_t {
        Start,       // before the top-level object
        Value,       // a value is expected (after ':' or ',' in an array)
        ArrayFirst,  // after '[': a value or ']'
        KeyFirst,    // after '{': a key or '}'
        Key,         // after ',' in an object: a key
        Colon,       // after a key
        AfterValue,  // after a value inside a container: ',' or its closing bracket
        String,      // inside a string (key_ says whether it is a key)
        Escape,      // after '\' in a string
        Unicode,     // in \uXXXX, hex_left digits to go
        Minus,       // after '-': a digit
        Zero,        // a number's integer part "0"
        Int,         // integer digits
        Dot,         // after '.': a digit
        Frac,        // fraction digits
        Exp,         // after 'e' / 'E': a sign or digit
        ExpSign,     // after the exponent's sign: a digit
        ExpDigits,   // exponent digits
        Literal,     // inside true / false / null
        Done,        // the top-level object is complete
    };

    bool step(uint8_t c);          // feed() without the rollback
    bool end_value();              // a value just ended: where the parse goes next
    bool after_number(uint8_t c);  // a byte that ends a number, handled as after a value
    bool whitespace();             // counts a whitespace byte against kMaxWhitespace
    bool start_value(uint8_t c);   // the first byte of a value

    std::array<uint8_t, kMaxDepth> stack_{};  // '{' or '['
    uint8_t depth_ = 0;
    Mode mode_ = Mode::Start;
    bool key_ = false;        // the current string is an object key
    uint8_t hex_left_ = 0;    // Unicode
    uint8_t literal_ = 0;     // which literal: 0 true, 1 false, 2 null
    uint8_t literal_at_ = 0;  // bytes of it matched
    uint8_t spaces_ = 0;      // consecutive whitespace bytes
};

}  // namespace fluoro
