// json_span: the strict JSON scanner tool-call parsing relies on. Each case is a value Python's
// json.loads accepts or refuses (checked by hand against CPython 3 behaviour).
#include "chat/json_span.h"

#include <gtest/gtest.h>

namespace fluoro {
namespace {

TEST(JsonSpan, AcceptsValidValues) {
    for (std::string_view ok : {"{}", "[]", "0", "-0.5e+3", "\"a\\u00e9\\n\"", "true", "null",
                                " {\"a\": [1, {\"b\": false}], \"c\": \"}\"} ", "[1,2 , 3]"})
        EXPECT_TRUE(is_json_value(ok)) << ok;
}

TEST(JsonSpan, RefusesInvalidValues) {
    for (std::string_view bad :
         {"", "{", "{\"a\":}", "[1,]", "{'a': 1}", "01", "1.", "-", "\"unterminated",
          "\"bad \\q escape\"", "{\"a\" 1}", "tru", "{} x", "[1] [2]", "\"tab\tinside\""})
        EXPECT_FALSE(is_json_value(bad)) << bad;
}

TEST(JsonSpan, ValueEndStopsAfterTheValue) {
    const std::string_view s = "  {\"a\": \"}\"}\n</tool_call>";
    const auto end = json_value_end(s);
    ASSERT_TRUE(end);
    EXPECT_EQ(s.substr(*end), "\n</tool_call>");
    EXPECT_FALSE(json_value_end("{\"a\": 1"));
}

TEST(JsonSpan, DeepNestingIsRefusedNotOverflowed) {
    const std::string deep = std::string(100000, '[') + std::string(100000, ']');
    EXPECT_FALSE(is_json_value(deep));
    const std::string ok = std::string(500, '[') + std::string(500, ']');
    EXPECT_TRUE(is_json_value(ok));
}

TEST(JsonSpan, ObjectMembersKeepRawValues) {
    const auto m =
        json_object_members(R"({"name": "get_weather", "arguments": {"city": "Paris"}})");
    ASSERT_TRUE(m);
    ASSERT_EQ(m->size(), 2u);
    EXPECT_EQ((*m)[0].first, "name");
    EXPECT_EQ((*m)[0].second, "\"get_weather\"");
    EXPECT_EQ((*m)[1].second, R"({"city": "Paris"})");
    EXPECT_FALSE(json_object_members("[1]"));
    EXPECT_FALSE(json_object_members("{\"a\": 1,}"));
}

TEST(JsonSpan, ArrayElements) {
    const auto e = json_array_elements(R"([{"a": 1}, 2 ,"x"])");
    ASSERT_TRUE(e);
    ASSERT_EQ(e->size(), 3u);
    EXPECT_EQ((*e)[0], R"({"a": 1})");
    EXPECT_EQ((*e)[2], "\"x\"");
    EXPECT_FALSE(json_array_elements("{}"));
}

TEST(JsonSpan, StringValueDecodesEscapes) {
    EXPECT_EQ(json_string_value(R"("a\"b\\c\/\n")"), std::string("a\"b\\c/\n"));
    EXPECT_EQ(json_string_value(R"("\u00e9")"), std::string("\xC3\xA9"));
    EXPECT_EQ(json_string_value(R"("\ud83d\ude00")"), std::string("\xF0\x9F\x98\x80"));
    EXPECT_EQ(json_string_value(R"("\ud83d")"), std::string("\xEF\xBF\xBD"));  // lone surrogate
    EXPECT_FALSE(json_string_value("abc"));
    EXPECT_FALSE(json_string_value("\"a\" \"b\""));
}

}  // namespace
}  // namespace fluoro
