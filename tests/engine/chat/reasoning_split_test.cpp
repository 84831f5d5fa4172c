// ReasoningSplitter: reasoning and answer separated as the text streams in, whatever way the
// tokens cut the markers, for the <think> convention and gpt-oss channels.
#include "chat/reasoning_split.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace fluoro {
namespace {

struct Split {
    std::string reasoning, answer;
};

Split run(const std::vector<std::string>& pieces, bool open = false) {
    ReasoningSplitter s(open);
    Split out;
    for (const std::string& p : pieces) {
        const ReasoningDelta d = s.feed(p);
        out.reasoning += d.reasoning;
        out.answer += d.answer;
    }
    const ReasoningDelta d = s.finish();
    out.reasoning += d.reasoning;
    out.answer += d.answer;
    return out;
}

// Every way of cutting `text` into two and three pieces gives the same split.
void expect_any_cut(const std::string& text, bool open, const std::string& reasoning,
                    const std::string& answer) {
    for (size_t i = 0; i <= text.size(); ++i) {
        for (size_t j = i; j <= text.size(); ++j) {
            const Split s = run({text.substr(0, i), text.substr(i, j - i), text.substr(j)}, open);
            ASSERT_EQ(s.reasoning, reasoning) << "cut at " << i << ", " << j;
            ASSERT_EQ(s.answer, answer) << "cut at " << i << ", " << j;
        }
    }
}

TEST(ReasoningSplit, NoTagsIsAllAnswer) {
    expect_any_cut("Hello <b>world</b> a<b", false, "", "Hello <b>world</b> a<b");
}

TEST(ReasoningSplit, ThinkBlockInTheOutput) {
    expect_any_cut("<think>Let me see.</think>\n\nThe answer is 4.", false, "Let me see.",
                   "\n\nThe answer is 4.");
}

TEST(ReasoningSplit, OpenedInThePromptOnlyTheCloseAppears) {
    expect_any_cut("2+2 is 4.\n</think>\n\nFour.", true, "2+2 is 4.\n", "\n\nFour.");
}

TEST(ReasoningSplit, CloseSplitIntoSingleCharactersStreams) {
    ReasoningSplitter s(true);
    std::string reasoning, answer;
    for (const char c : std::string("ab</think>cd")) {
        const ReasoningDelta d = s.feed(std::string(1, c));
        reasoning += d.reasoning;
        answer += d.answer;
        if (c == 'b') {
            EXPECT_EQ(reasoning, "ab");  // nothing held that cannot be a marker
        }
    }
    EXPECT_FALSE(s.in_reasoning());
    EXPECT_EQ(reasoning, "ab");
    EXPECT_EQ(answer, "cd");  // released without finish(): "d" cannot start a marker
    EXPECT_TRUE(s.finish().empty());
}

TEST(ReasoningSplit, APartialMarkerIsHeldThenReleasedAsText) {
    ReasoningSplitter s(true);
    ReasoningDelta d = s.feed("x </thi");
    EXPECT_EQ(d.reasoning, "x ");  // "</thi" may still become </think>
    d = s.feed("s is not a tag");
    EXPECT_EQ(d.reasoning, "</this is not a tag");
    EXPECT_TRUE(s.in_reasoning());
    d = s.feed(" <");
    EXPECT_EQ(d.reasoning, " ");
    d = s.finish();  // the stream ended: what was held is text
    EXPECT_EQ(d.reasoning, "<");
}

TEST(ReasoningSplit, UnclosedBlockStaysReasoning) {
    expect_any_cut("<think>I was cut off by max_tokens", false, "I was cut off by max_tokens", "");
    ReasoningSplitter s(true);
    s.feed("still thinking");
    EXPECT_TRUE(s.in_reasoning());
}

TEST(ReasoningSplit, StrayCloseWithoutOpenEndsNothingButIsRemoved) {
    expect_any_cut("a</think>b", false, "", "ab");
}

TEST(ReasoningSplit, GptOssChannels) {
    const std::string text =
        "<|channel|>analysis<|message|>User wants 2+2.<|end|><|start|>assistant"
        "<|channel|>final<|message|>4";
    expect_any_cut(text, false, "User wants 2+2.", "4");
}

TEST(ReasoningSplit, GptOssCommentaryIsAnswerAndConstrainIsMarkup) {
    const std::string text =
        "<|channel|>analysis<|message|>call it<|end|><|start|>assistant<|channel|>commentary "
        "to=functions.f <|constrain|>json<|message|>{\"x\":1}<|call|>";
    expect_any_cut(text, false, "call it", "{\"x\":1}");
}

TEST(ReasoningSplit, GptOssOpenInPrompt) {
    expect_any_cut("hmm<|end|><|start|>assistant<|channel|>final<|message|>ok", true, "hmm", "ok");
}

TEST(ReasoningSplit, MalformedHeaderWithoutMessageIsKeptAsText) {
    const Split s = run({"<|start|>assistant and then", " nothing"});
    EXPECT_EQ(s.answer, "assistant and then nothing");
}

TEST(ReasoningSplit, PromptTail) {
    EXPECT_TRUE(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n"));
    EXPECT_TRUE(prompt_opens_reasoning("<｜Assistant｜><think>"));
    EXPECT_TRUE(prompt_opens_reasoning("<|start|>assistant<|channel|>analysis<|message|>"));
    EXPECT_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
    EXPECT_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n"));
    EXPECT_FALSE(prompt_opens_reasoning(""));
    EXPECT_FALSE(prompt_opens_reasoning("user: <think> what?\nassistant:"));
}

}  // namespace
}  // namespace fluoro
