// Python's formatting rules the renderer reproduces: float repr, str repr, json.dumps.
// Expected strings are what CPython 3 prints (repr(x), json.dumps(x, ...)).
#include <gtest/gtest.h>

#include "chat/jinja/jinja_error.h"
#include "chat/jinja/jinja_json.h"
#include "chat/jinja/jinja_value.h"

namespace fluoro::jinja {
namespace {

TEST(JinjaValue, FloatsPrintLikePythonRepr) {
    EXPECT_EQ(format_float(1.0), "1.0");
    EXPECT_EQ(format_float(0.1), "0.1");
    EXPECT_EQ(format_float(-2.5), "-2.5");
    EXPECT_EQ(format_float(1e16), "1e+16");
    EXPECT_EQ(format_float(1e15), "1000000000000000.0");
    EXPECT_EQ(format_float(0.0001), "0.0001");
    EXPECT_EQ(format_float(0.00001), "1e-05");
    EXPECT_EQ(format_float(1.5e-7), "1.5e-07");
    EXPECT_EQ(format_float(123456789.125), "123456789.125");
    EXPECT_EQ(format_float(0.1 + 0.2), "0.30000000000000004");
}

TEST(JinjaValue, StringsReprLikePython) {
    EXPECT_EQ(repr_string("a"), "'a'");
    EXPECT_EQ(repr_string("it's"), "\"it's\"");
    EXPECT_EQ(repr_string("'\""), "'\\'\"'");
    EXPECT_EQ(repr_string("a\nb\\"), "'a\\nb\\\\'");
    EXPECT_EQ(repr_string("\x01\x7f"), "'\\x01\\x7f'");
    EXPECT_EQ(repr_string("caf\xc3\xa9"), "'caf\xc3\xa9'");  // printable non-ASCII stays as is
}

TEST(JinjaValue, EqualityAndTruthFollowPython) {
    EXPECT_TRUE(equals(Value(1), Value(1.0)));
    EXPECT_TRUE(equals(Value(true), Value(1)));
    EXPECT_FALSE(equals(Value("1"), Value(1)));
    EXPECT_TRUE(equals(Value(), Value()));  // Undefined == Undefined in jinja2
    EXPECT_FALSE(equals(Value(), Value::none()));
    EXPECT_FALSE(Value::list().truthy());
    EXPECT_TRUE(Value::make_namespace().truthy());
    EXPECT_TRUE(Value::iterator({}).truthy());  // a generator is true even when empty
}

TEST(JinjaJson, DumpsLikePythonJson) {
    Value d = Value::dict();
    d.dict_data_mut().set(Value("b"),
                          Value::list({Value(1), Value(2.0), Value::none(), Value(false)}));
    d.dict_data_mut().set(Value("a"), Value("\xc3\xa9\n\"\x01"));
    JsonOptions o;
    // json.dumps(d, ensure_ascii=False)
    EXPECT_EQ(to_json(d, o), "{\"b\": [1, 2.0, null, false], \"a\": \"\xc3\xa9\\n\\\"\\u0001\"}");
    // json.dumps(d, ensure_ascii=True, sort_keys=True)
    o.ensure_ascii = true;
    o.sort_keys = true;
    EXPECT_EQ(to_json(d, o), "{\"a\": \"\\u00e9\\n\\\"\\u0001\", \"b\": [1, 2.0, null, false]}");
    // json.dumps(d, indent=1): items separated by "," and newlines
    JsonOptions ind;
    ind.indent = " ";
    EXPECT_EQ(to_json(Value::list({Value(1), Value::list()}), ind), "[\n 1,\n []\n]");
    // json.dumps('\U0001F600', ensure_ascii=True): a surrogate pair
    EXPECT_EQ(to_json(Value("\xf0\x9f\x98\x80"), o), "\"\\ud83d\\ude00\"");
    EXPECT_THROW(to_json(Value(), o), TemplateRuntimeError);
}

}  // namespace
}  // namespace fluoro::jinja
