// Templates that must fail, and how: jinja2's errors (the shared substring of its message is noted
// per case, from jinja2 3.1.6 under transformers' settings), our refusals, and hostile input that
// must end in an exception with a position, never a crash, a hang or unbounded memory.
#include <gtest/gtest.h>

#include <string>

#include "engine/chat/jinja/jinja_test_support.h"

namespace fluoro::jinja {
namespace {

// The message of the exception of type E that rendering throws ("" and a failure if none).
template <typename E>
std::string error_of(std::string_view tmpl, std::string_view ctx = "{}",
                     RenderOptions options = {}) {
    try {
        test::render(tmpl, ctx, options);
    } catch (const E& e) {
        return e.what();
    }
    ADD_FAILURE() << "no exception for: " << tmpl;
    return "";
}

TEST(JinjaErrors, RaiseExceptionCarriesTheTemplatesMessageExactly) {
    EXPECT_EQ(
        error_of<TemplateRaised>("{{ raise_exception('Conversation roles must alternate') }}"),
        "Conversation roles must alternate");
}

// jinja2's default Undefined: printing is empty, but attribute access and arithmetic raise
// UndefinedError "'missing' is undefined".
TEST(JinjaErrors, UndefinedMisuseRaisesWithPosition) {
    // The position is the failing access (the dot), the name is the undefined variable.
    EXPECT_EQ(error_of<TemplateRuntimeError>("ab\n  {{ missing.attr }}"),
              "2:13: 'missing' is undefined");
    EXPECT_NE(error_of<TemplateRuntimeError>("{{ missing + 1 }}").find("'missing' is undefined"),
              std::string::npos);
    EXPECT_NE(error_of<TemplateRuntimeError>("{{ missing() }}").find("'missing' is undefined"),
              std::string::npos);
}

// ImmutableSandboxedEnvironment: "access to attribute 'append' of 'list' object is unsafe."
TEST(JinjaErrors, MutatingMethodsAreRefusedLikeTheImmutableSandbox) {
    EXPECT_NE(
        error_of<TemplateRuntimeError>("{% set l = [] %}{% set _ = l.append(1) %}").find("unsafe"),
        std::string::npos);
    EXPECT_NE(
        error_of<TemplateRuntimeError>("{% set d = {} %}{{ d.update({'a': 1}) }}").find("unsafe"),
        std::string::npos);
    // Merely printing the refused method is allowed (it is an Undefined), as in jinja2.
    EXPECT_EQ(test::render("[{{ [].append }}]"), "[]");
}

// jinja2's sandbox: OverflowError "Range too big. ..." above 100000 items.
TEST(JinjaErrors, RangeIsBoundedLikeTheSandbox) {
    EXPECT_NE(error_of<TemplateRuntimeError>("{{ range(200000)|length }}").find("Range too big"),
              std::string::npos);
    EXPECT_EQ(test::render("{{ range(100000)|length }}"), "100000");
}

// map/select return generators in jinja2: TypeError for tojson and len().
TEST(JinjaErrors, IteratorsAreNotJsonAndHaveNoLength) {
    EXPECT_NE(error_of<TemplateRuntimeError>("{{ [1]|map('string')|tojson }}")
                  .find("not JSON serializable"),
              std::string::npos);
    EXPECT_NE(error_of<TemplateRuntimeError>("{{ [1]|select|length }}").find("has no len()"),
              std::string::npos);
    // ... and are true even when empty, and consumed by the first walk.
    EXPECT_EQ(test::render("{% set it = [1, 2]|select %}{{ 'T' if [0]|select else 'F' }}{{ it|list "
                           "}}{{ it|list }}"),
              "T[1, 2][]");
}

// jinja2's indent appends "\n" to its value first, so a list or dict raises (TypeError /
// AttributeError); a generator's body fails only when consumed, then with its own error.
TEST(JinjaErrors, IndentNeedsAStringAndGeneratorsFailWhenConsumed) {
    EXPECT_NE(error_of<TemplateRuntimeError>("{{ [1]|indent }}").find("indent"), std::string::npos);
    EXPECT_EQ(test::render("{% set g = 5|items %}ok"), "ok");
    EXPECT_NE(error_of<TemplateRuntimeError>("{{ 5|items|list }}").find("mapping"),
              std::string::npos);
}

TEST(JinjaErrors, ComparingUnrelatedTypesRaises) {
    EXPECT_NE(error_of<TemplateRuntimeError>("{{ 1 < 'a' }}").find("not supported between"),
              std::string::npos);
}

TEST(JinjaErrors, SyntaxErrorsNameLineAndColumn) {
    EXPECT_EQ(error_of<TemplateSyntaxError>("ok\n{% if x %}never closed"),
              "2:23: unexpected end of template, expected 'endif'");
    EXPECT_EQ(error_of<TemplateSyntaxError>("{{ 1 + }}"), "1:8: unexpected '}}'");
    EXPECT_EQ(error_of<TemplateSyntaxError>("{{ x"),
              "1:1: unexpected end of template, expected '}}'");
    EXPECT_EQ(error_of<TemplateSyntaxError>("a {# open comment"), "1:3: unterminated comment");
    EXPECT_EQ(error_of<TemplateSyntaxError>("{{ 'open }}"), "1:4: unterminated string");
    EXPECT_EQ(error_of<TemplateSyntaxError>("{% endfor %}"),
              "1:4: Encountered unknown tag 'endfor'.");
    EXPECT_EQ(error_of<TemplateSyntaxError>("{% frobnicate %}"),
              "1:4: Encountered unknown tag 'frobnicate'.");
    EXPECT_EQ(error_of<TemplateSyntaxError>("{% break %}"), "1:4: 'break' outside a loop");
}

// jinja2 refuses an unknown filter when compiling ("No filter named 'nope'."), except inside an
// `if` or a conditional expression, where it fails only if that code runs.
TEST(JinjaErrors, UnknownFilterIsRefusedAtParseOutsideIfAndAtRunInside) {
    EXPECT_EQ(error_of<TemplateSyntaxError>("x\n {{ 1|nope }}"), "2:7: No filter named 'nope'.");
    EXPECT_EQ(test::render("{% if false %}{{ 1|nope }}{% endif %}done"), "done");
    EXPECT_NE(error_of<TemplateRuntimeError>("{% if true %}{{ 1|nope }}{% endif %}")
                  .find("No filter named 'nope'."),
              std::string::npos);
    EXPECT_EQ(error_of<TemplateSyntaxError>("{{ 1 is nope }}"), "1:9: No test named 'nope'.");
}

// Jinja2 features no chat template we know needs: refused up front, with the place.
TEST(JinjaErrors, UnsupportedFeaturesAreRefusedWithPosition) {
    EXPECT_EQ(error_of<UnsupportedError>("\n{% include 'x' %}"),
              "2:4: the 'include' tag is not supported");
    EXPECT_EQ(error_of<UnsupportedError>("{{ x|groupby('a') }}"),
              "1:6: the 'groupby' filter is not supported");
    EXPECT_EQ(error_of<UnsupportedError>("{% for x in y recursive %}{% endfor %}"),
              "1:15: recursive for loops are not supported");
}

TEST(JinjaHostile, DeepNestingIsRefusedNotAStackOverflow) {
    const std::string parens =
        "{{ " + std::string(100000, '(') + "1" + std::string(100000, ')') + " }}";
    EXPECT_NE(error_of<TemplateSyntaxError>(parens).find("nested too deeply"), std::string::npos);
    std::string ifs;
    for (int i = 0; i < 5000; ++i) ifs += "{% if true %}";
    EXPECT_NE(error_of<TemplateSyntaxError>(ifs).find("nested too deeply"), std::string::npos);
    std::string lists = "{{ " + std::string(50000, '[') + std::string(50000, ']') + " }}";
    EXPECT_NE(error_of<TemplateSyntaxError>(lists).find("nested too deeply"), std::string::npos);
}

TEST(JinjaHostile, RunawayLoopsStopAtTheStepBound) {
    RenderOptions o;
    o.max_steps = 100000;
    const auto msg = error_of<TemplateRuntimeError>(
        "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}", "{}",
        o);
    EXPECT_NE(msg.find("steps"), std::string::npos) << msg;
}

TEST(JinjaHostile, OutputIsBounded) {
    RenderOptions o;
    o.max_output_bytes = 1000;
    EXPECT_NE(error_of<TemplateRuntimeError>("{% for i in range(1000) %}xx{% endfor %}", "{}", o)
                  .find("output exceeds"),
              std::string::npos);
    // Doubling a string in a loop hits the built-value bound long before memory runs out.
    EXPECT_NE(error_of<TemplateRuntimeError>("{% set ns = namespace(s='xxxxxxxx') %}{% for i in "
                                             "range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}")
                  .find("MiB"),
              std::string::npos);
}

// Each iteration copies the whole list: O(n^2) work in few statements. Counted per item, it stops
// at the bound (jinja2 would run for minutes) instead of after 10^10 copies.
TEST(JinjaHostile, QuadraticCopyingStopsAtTheWorkBound) {
    const auto msg = error_of<TemplateRuntimeError>(
        "{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = ns.l + [i] %}"
        "{% endfor %}");
    EXPECT_NE(msg.find("steps"), std::string::npos) << msg;
}

// Two million nested lists would overflow the stack when destroyed; refused while being built.
TEST(JinjaHostile, MillionsOfNestingLevelsAreRefusedWhileBuilt) {
    const auto msg = error_of<TemplateRuntimeError>(
        "{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% for j in range(20) %}"
        "{% set ns.l = [ns.l] %}{% endfor %}{% endfor %}done");
    EXPECT_NE(msg.find("nested more than 400"), std::string::npos) << msg;
}

TEST(JinjaHostile, MacroRecursionIsBounded) {
    const auto msg =
        error_of<TemplateRuntimeError>("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
    EXPECT_NE(msg.find("macro calls nested"), std::string::npos) << msg;
}

TEST(JinjaHostile, SelfNestingValuesAreBounded) {
    const auto msg = error_of<TemplateRuntimeError>(
        "{% set ns = namespace(l=[]) %}{% for i in range(1000) %}{% set ns.l = [ns.l] %}{% endfor "
        "%}{{ ns.l }}");
    EXPECT_NE(msg.find("nested more than"), std::string::npos) << msg;
}

TEST(JinjaHostile, IntegerOverflowIsAnErrorNotUndefinedBehaviour) {
    EXPECT_THROW(test::render("{{ 9223372036854775807 + 1 }}"), UnsupportedError);
    EXPECT_THROW(test::render("{{ 2 ** 64 }}"), UnsupportedError);
    EXPECT_THROW(test::render("{{ 1 // 0 }}"), TemplateRuntimeError);
}

TEST(JinjaHostile, InvalidUtf8InContextDoesNotCrash) {
    EXPECT_EQ(test::render("{{ s|length }}", R"({"s": "ok"})"), "2");
    Value ctx = Value::dict();
    ctx.dict_data_mut().set(Value("s"), Value(std::string("a\xff\xfe")));
    EXPECT_EQ(Template::parse("{{ s|length }}{{ s[::-1]|length }}").render(ctx), "33");
}

}  // namespace
}  // namespace fluoro::jinja
