// The JSON-prefix recognizer (sampling/json_prefix.h) on documents from RFC 8259's grammar:
// every complete object is accepted byte by byte and reported complete at its last byte (not
// before), every prefix of it is accepted and not complete, and each malformed text is refused
// exactly at its first impossible byte (the state then still holding the bytes before it).
#include "sampling/json_prefix.h"

#include <gtest/gtest.h>

#include <string>

namespace fluoro {
namespace {

// Feeds text; returns the index of the first refused byte, or -1 when all were accepted.
int refused_at(const std::string& text, JsonPrefix* out = nullptr) {
    JsonPrefix p;
    for (size_t i = 0; i < text.size(); ++i)
        if (!p.feed(uint8_t(text[i]))) {
            if (out) *out = p;
            return int(i);
        }
    if (out) *out = p;
    return -1;
}

TEST(JsonPrefix, CompleteObjectsAreAcceptedAndCompleteOnlyAtTheEnd) {
    for (const std::string doc : {
             R"({})",
             R"( { "a" : 1 } )",
             R"({"a":[1,-2,3.5,0,-0.25e-3,1E+9,2e5],"b":{"c":null,"d":true,"e":false}})",
             R"({"s":"x\"y\\z\/\b\f\n\r\t\u00e9\uD83D\uDE00","k":"caf)"
             "\xc3\xa9"
             R"("})",
             R"({"nested":[[[]],{},[{}]],"empty":""})",
             "{\n  \"a\": [\n    1\n  ]\n}\n",
         }) {
        JsonPrefix p;
        for (size_t i = 0; i < doc.size(); ++i) {
            ASSERT_TRUE(p.feed(uint8_t(doc[i]))) << doc << " at " << i;
            ASSERT_EQ(p.complete(), i >= doc.find_last_of('}')) << doc << " at " << i;
        }
        EXPECT_TRUE(p.complete()) << doc;
    }
}

TEST(JsonPrefix, MalformedTextIsRefusedAtItsFirstImpossibleByte) {
    struct Case {
        std::string text;
        int at;
    };
    for (const Case& c : {
             Case{"[]", 0},                    // the top level is an object
             Case{"\"a\"", 0},                 //
             Case{"x", 0},                     //
             Case{"{a:1}", 1},                 // keys are strings
             Case{"{\"a\" 1}", 5},             // a colon first
             Case{"{\"a\":}", 5},              // a value first
             Case{"{\"a\":1,}", 7},            // no trailing comma
             Case{"{\"a\":01}", 6},            // no leading zeros
             Case{"{\"a\":-}", 6},             // a digit after '-'
             Case{"{\"a\":1.}", 7},            // a digit after '.'
             Case{"{\"a\":1e}", 7},            // a digit in the exponent
             Case{"{\"a\":1e+}", 8},           //
             Case{"{\"a\":tru}", 8},           // literals spelled out
             Case{"{\"a\":nul1}", 8},          //
             Case{"{\"a\":\"\\x\"}", 7},       // no such escape
             Case{"{\"a\":\"\\u12G4\"}", 10},  // four hex digits
             Case{"{\"a\":\"\x01\"}", 6},      // raw control characters
             Case{"{\"a\":[1}", 7},            // the bracket that is open
             Case{"{\"a\":1]}", 6},            //
             Case{"{} x", 3},                  // nothing after the object but whitespace
             Case{"{}{}", 2},                  // one object
         }) {
        JsonPrefix p;
        EXPECT_EQ(refused_at(c.text, &p), c.at) << c.text;
        // The refused byte left the state as it was: the prefix before it still continues.
        JsonPrefix again;
        EXPECT_TRUE(again.feed(c.text.substr(0, size_t(c.at)))) << c.text;
    }
}

TEST(JsonPrefix, NumbersEndAtTheByteAfterThem) {
    JsonPrefix p;
    ASSERT_TRUE(p.feed(std::string_view("{\"n\":10")));
    EXPECT_FALSE(p.complete());  // "10" may go on: 100, 10.5
    EXPECT_TRUE(p.feed('}'));    // ends the number and the object
    EXPECT_TRUE(p.complete());
}

TEST(JsonPrefix, DepthAndWhitespaceAreBounded) {
    std::string deep = "{\"a\":";
    for (int i = 1; i < JsonPrefix::kMaxDepth; ++i) deep += "[";
    EXPECT_EQ(refused_at(deep), -1);
    EXPECT_EQ(refused_at(deep + "["), int(deep.size()));  // one more level than allowed
    const std::string spaces(size_t(JsonPrefix::kMaxWhitespace), ' ');
    EXPECT_EQ(refused_at("{" + spaces + "}"), -1);
    EXPECT_EQ(refused_at("{" + spaces + " }"), 1 + JsonPrefix::kMaxWhitespace);
    // Inside a string spaces are text, not whitespace: any number of them.
    EXPECT_EQ(refused_at("{\"" + spaces + spaces + "\":1}"), -1);
}

}  // namespace
}  // namespace fluoro
