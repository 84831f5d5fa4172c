// Each construct chat templates use, rendered by our interpreter. Every expected string is what
// Python's jinja2 3.1.6 renders for the same template and context in transformers' environment
// (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, its tojson; built by
// tests/tools/jinja_compare.py's make_environment()), so these pin jinja2's documented behaviour.
#include <gtest/gtest.h>

#include "engine/chat/jinja/jinja_test_support.h"

namespace fluoro::jinja {
namespace {

TEST(JinjaRender, PrintsPythonReprs) {
    EXPECT_EQ(
        test::render(
            R"J({{ 1.0 }}|{{ True }}|{{ none }}|{{ ['a', 1, 2.5, none, true] }}|{{ {'k': 'v', 'n': [1]} }}|{{ (1,) }}|{{ 1e20 }}|{{ 0.00001 }})J",
            R"J({})J"),
        R"J(1.0|True|None|['a', 1, 2.5, None, True]|{'k': 'v', 'n': [1]}|(1,)|1e+20|1e-05)J");
}

TEST(JinjaRender, StringReprQuotes) {
    EXPECT_EQ(test::render(R"J({{ ["it's", 'say "hi"', 'tab\there', 'nl\n'] }})J", R"J({})J"),
              R"J(["it's", 'say "hi"', 'tab\there', 'nl\n'])J");
}

TEST(JinjaRender, Arithmetic) {
    EXPECT_EQ(
        test::render(
            R"J({{ 7 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 1 + 2 * 3 }} {{ 'ab' * 3 }} {{ 'a' ~ 1 ~ none }})J",
            R"J({})J"),
        R"J(3.5 3 -4 2 1024 0.5 7 ababab a1None)J");
}

TEST(JinjaRender, Comparisons) {
    EXPECT_EQ(
        test::render(
            R"J({{ 1 == 1.0 }} {{ 1 < 2 < 3 }} {{ 'a' in 'cat' }} {{ 3 not in [1, 2] }} {{ 'k' in {'k': 1} }} {{ not 0 }} {{ 1 and 'x' }} {{ 0 or 'y' }})J",
            R"J({})J"),
        R"J(True True True True True True x y)J");
}

TEST(JinjaRender, Conditional) {
    EXPECT_EQ(
        test::render(R"J({{ 'yes' if x else 'no' }}|{{ 'only' if false }}|)J", R"J({"x": 1})J"),
        R"J(yes||)J");
}

TEST(JinjaRender, IfElifElse) {
    EXPECT_EQ(
        test::render(
            R"J({% for n in [1, 2, 3] %}{% if n == 1 %}one{% elif n == 2 %}two{% else %}many{% endif %},{% endfor %})J",
            R"J({})J"),
        R"J(one,two,many,)J");
}

TEST(JinjaRender, ForLoopVariables) {
    EXPECT_EQ(
        test::render(
            R"J({% for x in ['a', 'b', 'c'] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.previtem }}{{ loop.nextitem }};{% endfor %})J",
            R"J({})J"),
        R"J(103TrueFalse3b;212FalseFalse3ac;321FalseTrue3b;)J");
}

TEST(JinjaRender, ForElseAndFilter) {
    EXPECT_EQ(
        test::render(
            R"J({% for x in [] %}x{% else %}empty{% endfor %}|{% for x in range(6) if x is odd %}{{ x }}{{ loop.length }} {% endfor %})J",
            R"J({})J"),
        R"J(empty|13 33 53 )J");
}

TEST(JinjaRender, ForUnpacksItems) {
    EXPECT_EQ(
        test::render(
            R"J({% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for k, v in d|dictsort %}{{ k }}{% endfor %})J",
            R"J({"d": {"b": 1, "a": 2}})J"),
        R"J(b=1;a=2;ab)J");
}

TEST(JinjaRender, BreakContinue) {
    EXPECT_EQ(
        test::render(
            R"J({% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}{% break %}{% endif %}{{ i }}{% endfor %})J",
            R"J({})J"),
        R"J(0134)J");
}

TEST(JinjaRender, SetScopingAndNamespace) {
    EXPECT_EQ(
        test::render(
            R"J({% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{% endfor %}{{ x }}|{% set ns = namespace(x=1) %}{% for i in [1] %}{% set ns.x = 2 %}{% endfor %}{{ ns.x }}|{% if true %}{% set y = 3 %}{% endif %}{{ y }})J",
            R"J({})J"),
        R"J(1|2|3)J");
}

TEST(JinjaRender, SetBlockAndTuple) {
    EXPECT_EQ(
        test::render(
            R"J({% set a, b = 1, 2 %}{{ a }}{{ b }}|{% set t %}  in block {{ a }}{% endset %}[{{ t }}]|{% set u | upper %}up{% endset %}{{ u }})J",
            R"J({})J"),
        R"J(12|[  in block 1]|UP)J");
}

TEST(JinjaRender, Macros) {
    EXPECT_EQ(
        test::render(
            R"J({% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('Ann') }} {{ greet('Bo', punct='?') }} {{ greet(name='Cy') }})J",
            R"J({})J"),
        R"J(Hi Ann! Hi Bo? Hi Cy!)J");
}

TEST(JinjaRender, WhitespaceControl) {
    EXPECT_EQ(test::render(R"J(a  {%- if true -%}  b  {%- endif -%}  c
  {{- ' d ' -}}  
e)J",
                           R"J({})J"),
              R"J(abc d e)J");
}

TEST(JinjaRender, TrimAndLstripBlocks) {
    EXPECT_EQ(test::render(R"J(<ul>
  {% for x in [1, 2] %}
    <li>{{ x }}</li>
  {% endfor %}
</ul>
{# comment #}
end
)J",
                           R"J({})J"),
              R"J(<ul>
    <li>1</li>
    <li>2</li>
</ul>
end)J");
}

TEST(JinjaRender, PlusDisablesLstrip) {
    EXPECT_EQ(test::render(R"J(x
  {%+ if true %}y{% endif %}
)J",
                           R"J({})J"),
              R"J(x
  y)J");
}

TEST(JinjaRender, RawBlock) {
    EXPECT_EQ(test::render(R"J({% raw %}{{ not parsed }}{% endraw %})J", R"J({})J"),
              R"J({{ not parsed }})J");
}

TEST(JinjaRender, UndefinedSemantics) {
    EXPECT_EQ(
        test::render(
            R"J([{{ missing }}]{{ missing is defined }}{{ missing|length }}{{ missing|default('d') }}{% for x in missing %}x{% endfor %}{{ d.nokey is defined }}[{{ d.nokey }}])J",
            R"J({"d": {}})J"),
        R"J([]False0dFalse[])J");
}

TEST(JinjaRender, TestsOnTypes) {
    EXPECT_EQ(
        test::render(
            R"J({{ 1 is number }}{{ true is number }}{{ true is integer }}{{ 1.5 is float }}{{ 's' is string }}{{ {} is mapping }}{{ [] is sequence }}{{ 's' is iterable }}{{ none is none }}{{ 4 is divisibleby 2 }}{{ 3 is even }}{{ x is true }}{{ x is boolean }}{{ 'a' is equalto 'a' }}{{ 5 is gt 3 }})J",
            R"J({"x": true})J"),
        R"J(TrueTrueFalseTrueTrueTrueTrueTrueTrueTrueFalseTrueTrueTrueTrue)J");
}

TEST(JinjaRender, StringFilters) {
    EXPECT_EQ(
        test::render(
            R"J({{ '  hi  '|trim }}|{{ 'xxhixx'|trim('x') }}|{{ 'hello world'|title }}|{{ 'hELLO'|capitalize }}|{{ 'a-b c'|upper }}|{{ 'ABC'|lower }}|{{ 'aXbX'|replace('X', '-') }}|{{ 'one two  three'|wordcount }}|{{ 'abc'|reverse }}|{{ 'héllo'|length }})J",
            R"J({})J"),
        R"J(hi|hi|Hello World|Hello|A-B C|abc|a-b-|3|cba|5)J");
}

TEST(JinjaRender, ListFilters) {
    EXPECT_EQ(
        test::render(
            R"J({{ [3, 1, 2]|sort }}{{ ['b', 'A', 'a']|sort }}{{ [1, 2, 2, 1]|unique|list }}{{ [4, 9]|min }}{{ [4, 9]|max }}{{ [1, 2]|sum }}{{ [1, 2, 3]|first }}{{ [1, 2, 3]|last }}{{ [1, 2, 3]|reverse|list }}{{ [1, 2, 3]|join('-') }}{{ 'ab'|list }}{{ range(7)|batch(3)|list }})J",
            R"J({})J"),
        R"J([1, 2, 3]['A', 'a', 'b'][1, 2]49313[3, 2, 1]1-2-3['a', 'b'][[0, 1, 2], [3, 4, 5], [6]])J");
}

TEST(JinjaRender, SelectAndMap) {
    EXPECT_EQ(
        test::render(
            R"J({{ msgs|selectattr('role', 'equalto', 'user')|map(attribute='content')|join(',') }}|{{ msgs|rejectattr('role', 'eq', 'user')|list|length }}|{{ [1, 2, 3, 4]|select('even')|list }}|{{ ['a', 'b']|map('upper')|list }}|{{ msgs|map(attribute='x', default='-')|list }})J",
            R"J({"msgs": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}]})J"),
        R"J(a,c|1|[2, 4]|['A', 'B']|['-', '-', '-'])J");
}

TEST(JinjaRender, ToJsonAsTransformers) {
    EXPECT_EQ(
        test::render(
            R"J({{ d|tojson }}|{{ d|tojson(indent=2) }}|{{ 'é<&>'|tojson }}|{{ 'é'|tojson(ensure_ascii=true) }}|{{ d|tojson(separators=(',', ':'), sort_keys=true) }}|{{ 1.0|tojson }})J",
            R"J({"d": {"z": [1, 2.5, null, true], "a": {"s": "x\"y"}}})J"),
        R"J({"z": [1, 2.5, null, true], "a": {"s": "x\"y"}}|{
  "z": [
    1,
    2.5,
    null,
    true
  ],
  "a": {
    "s": "x\"y"
  }
}|"é<&>"|"\u00e9"|{"a":{"s":"x\"y"},"z":[1,2.5,null,true]}|1.0)J");
}

TEST(JinjaRender, NumberFilters) {
    EXPECT_EQ(
        test::render(
            R"J({{ '42'|int }} {{ 'x'|int }} {{ '3.7'|int }} {{ 3.9|int }} {{ '2.5'|float }} {{ -3|abs }} {{ 2.567|round(2) }} {{ 2.5|round }} {{ 7|string }})J",
            R"J({})J"),
        R"J(42 0 3 3 2.5 3 2.57 2.0 7)J");
}

TEST(JinjaRender, IndentFilter) {
    EXPECT_EQ(test::render(R"J({{ 'a\nb\n\nc'|indent(2) }}|{{ 'a\nb'|indent(4, first=true) }})J",
                           R"J({})J"),
              R"J(a
  b

  c|    a
    b)J");
}

TEST(JinjaRender, EscapeAndSafe) {
    EXPECT_EQ(
        test::render(
            R"J({{ '<a href="x">'|e }}|{{ '<b>'|safe }}|{{ '<b>'|safe + '<i>' }}|{{ '<b>'|safe ~ '<i>' }})J",
            R"J({})J"),
        R"J(&lt;a href=&#34;x&#34;&gt;|<b>|<b>&lt;i&gt;|<b><i>)J");
}

TEST(JinjaRender, StringMethods) {
    EXPECT_EQ(
        test::render(
            R"J({{ ' x '.strip() }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'abc'.startswith('ab') }}|{{ 'abc'.endswith(('x', 'c')) }}|{{ 'Abc'.upper() }}{{ 'Abc'.lower() }}|{{ 'hello world'.title() }}|{{ 'aaa'.replace('a', 'b', 2) }}|{{ 'abcabc'.find('c') }}|{{ '{} and {name}'.format(1, name='n') }}|{{ 'x.y.z'.rsplit('.', 1) }}|{{ '--a--'.lstrip('-') }}{{ '--a--'.rstrip('-') }})J",
            R"J({})J"),
        R"J(x|['a', 'b', '', 'c']|['a', 'b']|True|True|ABCabc|Hello World|bba|2|1 and n|['x.y', 'z']|a----a)J");
}

TEST(JinjaRender, DictMethodsAndAccess) {
    EXPECT_EQ(
        test::render(
            R"J({{ d.get('a') }}{{ d.get('zz', 'dflt') }}{{ d.get('zz') }}|{{ d.keys()|list }}{{ d.values()|list }}|{{ d['a'] }}{{ d.a }}|{{ l[0] }}{{ l[-1] }}{{ l[1:] }}{{ l[::-1] }}{{ l[:-1] }}{{ 'hello'[1:3] }}{{ l.0 }})J",
            R"J({"d": {"a": 1, "b": 2}, "l": [1, 2, 3]})J"),
        R"J(1dfltNone|['a', 'b'][1, 2]|11|13[2, 3][3, 2, 1][1, 2]el1)J");
}

TEST(JinjaRender, ItemsFilterAndDictLiteral) {
    EXPECT_EQ(
        test::render(R"J({% for k, v in {'x': 1, 'y': [2]}|items %}{{ k }}{{ v }}{% endfor %})J",
                     R"J({})J"),
        R"J(x1y[2])J");
}

TEST(JinjaRender, StrftimeNow) {
    EXPECT_EQ(test::render(R"J({{ strftime_now('%Y-%m-%d %d %b %Y') }})J", R"J({})J"),
              R"J(2025-07-26 26 Jul 2025)J");
}

TEST(JinjaRender, GenerationBlock) {
    EXPECT_EQ(test::render(R"J({% generation %}kept {{ 1 }}{% endgeneration %})J", R"J({})J"),
              R"J(kept 1)J");
}

TEST(JinjaRender, FilterBlock) {
    EXPECT_EQ(test::render(R"J({% filter upper %}shout {{ 'x' }}{% endfilter %})J", R"J({})J"),
              R"J(SHOUT X)J");
}

TEST(JinjaRender, LoopOverStringsAndDicts) {
    EXPECT_EQ(
        test::render(
            R"J({% for c in 'ab' %}{{ c }};{% endfor %}{% for k in {'p': 1, 'q': 2} %}{{ k }}{% endfor %})J",
            R"J({})J"),
        R"J(a;b;pq)J");
}

TEST(JinjaRender, RoundKeepsIntsAndRoundsHalfToEven) {
    EXPECT_EQ(
        test::render(
            R"J({{ 1|round }} {{ true|round }} {{ 2.5|round }} {{ 3.5|round }} {{ 2.567|round(1, 'floor') }} {{ 7|round(0, 'ceil') }})J",
            R"J({})J"),
        R"J(1 1 2.0 4.0 2.5 7.0)J");
}

TEST(JinjaRender, GeneratorsAreLazyTrueAndNotSequences) {
    EXPECT_EQ(
        test::render(
            R"J({{ 'Y' if (5|items) else 'N' }}{{ [1]|select is sequence }}{{ [1]|select is iterable }}{{ missing is callable }})J",
            R"J({})J"),
        R"J(YFalseTrueTrue)J");
}

TEST(JinjaRender, OddEvenOnFloats) {
    EXPECT_EQ(test::render(R"J({{ 2.0 is even }}{{ 3.0 is odd }}{{ -3 is odd }})J", R"J({})J"),
              R"J(TrueTrueTrue)J");
}

TEST(JinjaRender, DictViewsPrintLikePython) {
    EXPECT_EQ(test::render(R"J({{ d.items() }}|{{ d.keys() }}|{{ d.values() }})J",
                           R"J({"d": {"a": 1}})J"),
              R"J(dict_items([('a', 1)])|dict_keys(['a'])|dict_values([1]))J");
}

TEST(JinjaRender, LastOfUndefinedIsUndefined) {
    EXPECT_EQ(test::render(R"J([{{ missing|last }}])J", R"J({})J"), R"J([])J");
}

}  // namespace
}  // namespace fluoro::jinja
