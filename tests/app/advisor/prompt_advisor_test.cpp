// The prompt-order advisor on synthetic request logs: a stable system prompt, a timestamp at its
// start, reordered tool definitions (JSON and lines), no requests; and on SmolLM2's tokenizer.
#include "advisor/prompt_advisor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <functional>

#include "advisor/advice_report.h"
#include "app/advisor/advisor_test_util.h"
#include "gguf/gguf_file.h"
#include "test_models.h"
#include "tokenizer/tokenizer.h"

namespace fluoro::app {
namespace {

using test::chatml;
using test::instructions;
using test::questions;
using test::WordTokenizer;

std::string rid(size_t i) {
    std::string s = "r";
    s += std::to_string(i);
    return s;
}

std::string clock(int seconds) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "2024-05-01T12:%02d:%02dZ", seconds / 60, seconds % 60);
    return buf;
}

std::vector<AdvisorRequest> stable_requests(WordTokenizer& tok) {
    std::vector<AdvisorRequest> reqs;
    for (size_t i = 0; i < questions().size(); ++i)
        reqs.push_back(tok.request(
            rid(i), chatml("You are a helpful assistant.\n" + instructions(), questions()[i])));
    return reqs;
}

TEST(PromptAdvisor, StableSystemPromptIsSharedAndHasNoBreakers) {
    WordTokenizer tok;
    const auto reqs = stable_requests(tok);
    const PromptAdvice a = advise_prompt_order(reqs);

    EXPECT_GT(a.recorded.hit_rate_after_first(), 0.8);
    EXPECT_TRUE(a.breakers.empty());
    EXPECT_EQ(a.what_if.requests_rewritten, 0);
    EXPECT_EQ(a.what_if.simulation.cached_tokens, a.recorded.cached_tokens);
    ASSERT_FALSE(a.shared.empty());
    const int64_t system_prefix = tok.count("<|im_start|>system\nYou are a helpful assistant.\n" +
                                            instructions() + "<|im_end|>\n<|im_start|>user\n");
    EXPECT_EQ(a.shared[0].tokens, system_prefix);
    EXPECT_EQ(a.shared[0].requests, int64_t(reqs.size()));
    EXPECT_EQ(a.shared[0].head.substr(0, 18), "<|im_start|>system");
    for (size_t i = 1; i < reqs.size(); ++i) {  // questions may share a first word or two
        EXPECT_EQ(a.recorded.requests[i].reuse, Reuse::Diverges) << i;
        EXPECT_GE(a.recorded.requests[i].shared_tokens, system_prefix) << i;
        EXPECT_LE(a.recorded.requests[i].shared_tokens, system_prefix + 2) << i;
    }
    EXPECT_EQ(a.recorded.requests[1].source, 0);
    EXPECT_EQ(a.recorded.requests[0].reuse, Reuse::Cold);
}

TEST(PromptAdvisor, TimestampAtTheStartOfTheSystemPromptIsABreaker) {
    WordTokenizer tok;
    std::vector<AdvisorRequest> reqs;
    for (size_t i = 0; i < questions().size(); ++i)
        reqs.push_back(tok.request(
            rid(i), chatml(clock(int(i) * 7) + "\nYou are a helpful assistant.\n" + instructions(),
                           questions()[i])));
    const PromptAdvice a = advise_prompt_order(reqs);

    ASSERT_EQ(a.breakers.size(), 1u);
    const CacheBreaker& b = a.breakers[0];
    EXPECT_EQ(b.kind, BreakerKind::Volatile);
    EXPECT_EQ(b.span, SpanKind::Timestamp);
    EXPECT_EQ(b.location.role, "system");
    EXPECT_EQ(b.location.offset, 0);                        // the system prompt's start
    EXPECT_EQ(b.token, tok.count("<|im_start|>system\n"));  // 2 tokens of template before it
    EXPECT_EQ(b.tokens, tok.count(clock(7)));               // the whole value, not one digit
    EXPECT_EQ(b.text, clock(7));
    EXPECT_EQ(b.other_text, clock(0));
    EXPECT_EQ(b.occurrences, int64_t(reqs.size()) - 1);
    EXPECT_NE(b.suggestion.find("move the timestamp at token 0 of the system message"),
              std::string::npos)
        << b.suggestion;

    EXPECT_LT(a.recorded.hit_rate_after_first(), 0.1);
    EXPECT_GT(a.what_if.simulation.hit_rate_after_first(), 0.8);
    EXPECT_EQ(a.what_if.requests_rewritten, int64_t(reqs.size()));
    // The advice's estimate matches the stable prompt's actual rate within the moved tokens.
    WordTokenizer stable_tok;
    const PromptAdvice stable = advise_prompt_order(stable_requests(stable_tok));
    EXPECT_NEAR(a.what_if.simulation.hit_rate_after_first(), stable.recorded.hit_rate_after_first(),
                0.05);
}

// Four tool definitions; request i lists them rotated by i.
std::string tools_json(size_t rotate) {
    const std::vector<std::string> tools = {
        R"({"name": "search", "description": "Search the web for a query"})",
        R"({"name": "weather", "description": "Current weather for a city"})",
        R"({"name": "calc", "description": "Evaluate an arithmetic expression"})",
        R"({"name": "clock", "description": "The current date and time"})",
    };
    std::string s = "[";
    for (size_t k = 0; k < tools.size(); ++k) {
        if (k) s += ", ";
        s += tools[(k + rotate) % tools.size()];
    }
    return s + "]";
}

std::string tools_lines(size_t rotate) {
    const std::vector<std::string> tools = {
        "- search: Search the web for a query", "- weather: Current weather for a city",
        "- calc: Evaluate an arithmetic expression", "- clock: The current date and time"};
    std::string s;
    for (size_t k = 0; k < tools.size(); ++k) s += tools[(k + rotate) % tools.size()] + "\n";
    return s;
}

void expect_reordering(const std::function<std::string(size_t)>& tools, SegmentKind kind) {
    WordTokenizer tok;
    std::vector<AdvisorRequest> reqs;
    for (size_t i = 0; i < 6; ++i)
        reqs.push_back(tok.request(
            rid(i), chatml("You can call these tools:\n" + tools(i % 4) + "\n" + instructions(),
                           questions()[i])));
    const PromptAdvice a = advise_prompt_order(reqs);
    ASSERT_FALSE(a.breakers.empty());
    const CacheBreaker& b = a.breakers[0];
    EXPECT_EQ(b.kind, BreakerKind::Reordered);
    EXPECT_EQ(b.segment_kind, kind);
    EXPECT_EQ(b.segments, 4);
    EXPECT_EQ(b.location.role, "system");
    EXPECT_EQ(b.location.offset,
              tok.count("You can call these tools:\n" +
                        std::string(kind == SegmentKind::JsonObjects ? "[" : "")));
    EXPECT_NE(b.suggestion.find("fixed order"), std::string::npos) << b.suggestion;
    // Sorted tool lists make every system prompt alike: all of it is reused after the first.
    EXPECT_GT(a.what_if.simulation.hit_rate_after_first(), a.recorded.hit_rate_after_first() + 0.3);
    EXPECT_GT(a.what_if.simulation.hit_rate_after_first(), 0.8);
    EXPECT_GT(a.what_if.reordered_regions, 0);
}

TEST(PromptAdvisor, ReorderedJsonToolsAreFoundAndCanonicalised) {
    expect_reordering(tools_json, SegmentKind::JsonObjects);
}

TEST(PromptAdvisor, ReorderedToolLinesAreFoundAndCanonicalised) {
    expect_reordering(tools_lines, SegmentKind::Lines);
}

TEST(PromptAdvisor, ChangingNumberAndIdAreClassified) {
    WordTokenizer tok;
    std::vector<AdvisorRequest> reqs;
    const char* ids[] = {"3f2a9c1e77b04d21", "9b1c0d2e4f6a8b3c", "a1b2c3d4e5f60718"};
    for (int i = 0; i < 3; ++i)
        reqs.push_back(tok.request(
            rid(i), chatml("Session " + std::string(ids[i]) + ".\nYou are request number " +
                               std::to_string(100 + i) + " today.\n" + instructions(),
                           questions()[size_t(i)])));
    const PromptAdvice a = advise_prompt_order(reqs);
    ASSERT_EQ(a.breakers.size(), 2u);
    std::vector<SpanKind> kinds = {a.breakers[0].span, a.breakers[1].span};
    std::sort(kinds.begin(), kinds.end());
    EXPECT_EQ(kinds, (std::vector<SpanKind>{SpanKind::Id, SpanKind::Number}));
    EXPECT_GT(a.what_if.simulation.hit_rate_after_first(), 0.8);
}

TEST(PromptAdvisor, IdenticalPromptsCacheAllButTheLastToken) {
    WordTokenizer tok;
    const std::vector<AdvisorRequest> reqs = {tok.request("a", "one two three"),
                                              tok.request("b", "one two three")};
    const PromptAdvice a = advise_prompt_order(reqs);
    EXPECT_EQ(a.recorded.requests[1].reuse, Reuse::Repeats);
    EXPECT_EQ(a.recorded.requests[1].cached_tokens, int64_t(reqs[1].ids.size()) - 1);
    EXPECT_EQ(a.recorded.cached_tokens, int64_t(reqs[1].ids.size()) - 1);
}

// A conversation's next turn starts with the previous prompt and the answer the model generated:
// the cache holds the answer too.
TEST(PromptAdvisor, NextTurnReusesTheAnswer) {
    std::vector<AdvisorRequest> reqs(2);
    reqs[0].ids = {1, 2, 3};
    reqs[0].output_ids = {7, 8};
    reqs[1].ids = {1, 2, 3, 7, 8, 9, 4};
    const PromptAdvice a = advise_prompt_order(reqs);
    EXPECT_EQ(a.recorded.requests[1].reuse, Reuse::Extends);
    EXPECT_EQ(a.recorded.requests[1].cached_tokens, 5);
    EXPECT_EQ(a.what_if.simulation.requests[1].cached_tokens, 5);
}

TEST(PromptAdvisor, EmptyInputGivesAnEmptyReport) {
    const PromptAdvice a = advise_prompt_order({});
    EXPECT_EQ(a.recorded.prompt_tokens, 0);
    EXPECT_EQ(a.recorded.hit_rate(), 0.0);
    EXPECT_TRUE(a.shared.empty());
    EXPECT_TRUE(a.breakers.empty());
    EXPECT_NE(advice_text(a, {}).find("none found"), std::string::npos);
    EXPECT_EQ(advice_json(a, {})["requests"].size(), 0u);
}

TEST(PromptAdvisor, RequestsWithoutTextStillSimulate) {
    std::vector<AdvisorRequest> reqs(3);
    reqs[0].ids = {1, 2, 3, 4};
    reqs[1].ids = {1, 2, 3, 4, 5, 6};  // extends the first
    reqs[2].ids = {1, 2, 9};
    const PromptAdvice a = advise_prompt_order(reqs);
    EXPECT_EQ(a.recorded.requests[1].reuse, Reuse::Extends);
    EXPECT_EQ(a.recorded.requests[1].cached_tokens, 4);
    EXPECT_EQ(a.recorded.requests[2].reuse, Reuse::Diverges);
    EXPECT_EQ(a.recorded.requests[2].token, 9);
    EXPECT_EQ(a.recorded.requests[2].source_token, 3);
    EXPECT_EQ(a.recorded.requests[2].source, 1);  // the latest sharing the prefix
    EXPECT_EQ(a.divergence[2].first, "#9");
}

std::vector<AdvisorRequest> smollm2_requests(const std::function<std::string(size_t)>& system) {
    const std::filesystem::path model = fluoro::test::models_dir() / fluoro::test::kSmolLM2File;
    const tok::Tokenizer t = tok::Tokenizer::from_gguf(gguf::GgufFile::open(model));
    std::vector<AdvisorRequest> reqs;
    for (size_t i = 0; i < questions().size(); ++i) {
        AdvisorRequest r;
        r.id = rid(i);
        r.ids = t.encode(chatml(system(i), questions()[i]), false, true);
        for (const int32_t id : r.ids) r.pieces.push_back(t.token_to_piece(id, true));
        reqs.push_back(std::move(r));
    }
    return reqs;
}

// Real prompts through SmolLM2's tokenizer (byte-level BPE): the clock is split into several
// tokens differently from request to request, and still found whole.
TEST(PromptAdvisor, TimestampFoundWithSmolLM2Tokenizer) {
    FLUORO_REQUIRE_MODEL(model, fluoro::test::kSmolLM2File);
    const auto reqs = smollm2_requests([](size_t i) {
        return "Current time: " + clock(int(i) * 13) + ". You are a helpful assistant.\n" +
               instructions();
    });
    const PromptAdvice a = advise_prompt_order(reqs);
    ASSERT_FALSE(a.breakers.empty());
    const CacheBreaker& b = a.breakers[0];
    EXPECT_EQ(b.span, SpanKind::Timestamp);
    EXPECT_EQ(b.location.role, "system");
    EXPECT_NE(b.text.find("12:"), std::string::npos) << b.text;
    EXPECT_NE(b.before.find("time:"), std::string::npos) << b.before;
    EXPECT_LT(a.recorded.hit_rate_after_first(), 0.15);
    EXPECT_GT(a.what_if.simulation.hit_rate_after_first(), 0.8);
}

// BPE merges a separator into the next object's first token (" {\"") but not the first one's
// ("{\""): the what-if still makes every tool list alike, by using one real ordering's tokens.
TEST(PromptAdvisor, ReorderedToolsFoundWithSmolLM2Tokenizer) {
    FLUORO_REQUIRE_MODEL(model, fluoro::test::kSmolLM2File);
    const auto reqs = smollm2_requests([](size_t i) {
        return "You can call these tools:\n" + tools_json(i % 4) + "\n" + instructions();
    });
    const PromptAdvice a = advise_prompt_order(reqs);
    ASSERT_FALSE(a.breakers.empty());
    EXPECT_EQ(a.breakers[0].kind, BreakerKind::Reordered);
    EXPECT_EQ(a.breakers[0].segment_kind, SegmentKind::JsonObjects);
    EXPECT_EQ(a.breakers[0].segments, 4);
    // Recorded: a request reuses the system prompt only after its rotation came up before.
    EXPECT_LT(a.recorded.hit_rate_after_first(), a.what_if.simulation.hit_rate_after_first() - 0.2);
    EXPECT_GT(a.what_if.simulation.hit_rate_after_first(), 0.85);
}

}  // namespace
}  // namespace fluoro::app
