// render_chat on small hand-written conversations: each family's layout, the BOS rule, the
// Unknown fallback, role errors naming the message, and Python-compatible trimming.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "chat/chat_render.h"
#include "chat/python_strip.h"
#include "core/error.h"

namespace fluoro {
namespace {

const std::vector<ChatMessage> kSysUser = {{"system", "Be terse."}, {"user", " Hi "}};

TEST(ChatRenderTest, ChatMLKeepsContentVerbatim) {
    const auto r = render_chat(ChatTemplateKind::ChatML, kSysUser, true);
    EXPECT_EQ(r.text,
              "<|im_start|>system\nBe terse.<|im_end|>\n<|im_start|>user\n Hi <|im_end|>\n"
              "<|im_start|>assistant\n");
    EXPECT_FALSE(r.template_bos);
    EXPECT_FALSE(r.unknown_template);
    EXPECT_FALSE(r.needs_bos(false));
    EXPECT_TRUE(r.needs_bos(true));
}

TEST(ChatRenderTest, ChatMLDefaultSystemPromptOnlyWhenTheFirstMessageIsNotSystem) {
    ChatRenderOptions opt;
    opt.default_system_prompt = "Default.";
    const std::vector<ChatMessage> user = {{"user", "Hi"}};
    EXPECT_EQ(render_chat(ChatTemplateKind::ChatML, user, false, opt).text,
              "<|im_start|>system\nDefault.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
    EXPECT_EQ(render_chat(ChatTemplateKind::ChatML, kSysUser, false, opt).text,
              "<|im_start|>system\nBe terse.<|im_end|>\n<|im_start|>user\n Hi <|im_end|>\n");
    // No messages: the template's loop never runs, so no default either.
    EXPECT_EQ(render_chat(ChatTemplateKind::ChatML, {}, true, opt).text, "<|im_start|>assistant\n");
}

TEST(ChatRenderTest, Llama3TrimsAndPutsBosBeforeTheFirstMessage) {
    const auto r = render_chat(ChatTemplateKind::Llama3, kSysUser, true);
    EXPECT_EQ(r.text,
              "<|start_header_id|>system<|end_header_id|>\n\nBe terse.<|eot_id|>"
              "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
              "<|start_header_id|>assistant<|end_header_id|>\n\n");
    EXPECT_TRUE(r.template_bos);
    EXPECT_TRUE(r.needs_bos(false));
    EXPECT_FALSE(render_chat(ChatTemplateKind::Llama3, {}, true).template_bos);
}

TEST(ChatRenderTest, GemmaFoldsTheSystemMessageIntoTheFirstUserTurn) {
    const std::vector<ChatMessage> msgs = {
        {"system", "Be terse. "}, {"user", "Hi"}, {"assistant", " Hello! "}, {"user", "Bye"}};
    const auto r = render_chat(ChatTemplateKind::Gemma, msgs, true);
    EXPECT_EQ(r.text,
              "<start_of_turn>user\nBe terse. \n\nHi<end_of_turn>\n"
              "<start_of_turn>model\nHello!<end_of_turn>\n"
              "<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n");
    EXPECT_TRUE(r.template_bos);
    const std::vector<ChatMessage> user = {{"user", "Hi"}};
    EXPECT_EQ(render_chat(ChatTemplateKind::Gemma, user, false).text,
              "<start_of_turn>user\nHi<end_of_turn>\n");
}

std::string error_of(ChatTemplateKind kind, const std::vector<ChatMessage>& msgs) {
    try {
        render_chat(kind, msgs, true);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

TEST(ChatRenderTest, GemmaRoleViolationsNameTheMessage) {
    const auto gemma = ChatTemplateKind::Gemma;
    EXPECT_NE(error_of(gemma, {{"user", "a"}, {"user", "b"}}).find("message 1"), std::string::npos);
    EXPECT_NE(error_of(gemma, {{"assistant", "a"}}).find("message 0"), std::string::npos);
    EXPECT_NE(error_of(gemma, {{"system", "s"}, {"assistant", "a"}}).find("message 1"),
              std::string::npos);
    // Jinja would render a "system" turn here (index 1 is an odd position); we refuse it.
    EXPECT_NE(error_of(gemma, {{"user", "a"}, {"system", "b"}}).find("message 1"),
              std::string::npos);
    EXPECT_NE(
        error_of(gemma, {{"user", "a"}, {"assistant", "b"}, {"assistant", "c"}}).find("message 2"),
        std::string::npos);
    EXPECT_FALSE(error_of(gemma, {}).empty());
    // The other families render any order of the three roles.
    EXPECT_EQ(error_of(ChatTemplateKind::ChatML, {{"user", "a"}, {"user", "b"}}), "");
    EXPECT_EQ(error_of(ChatTemplateKind::Llama3, {{"assistant", "a"}}), "");
}

TEST(ChatRenderTest, UnknownRolesAreRejectedEverywhere) {
    for (auto kind : {ChatTemplateKind::ChatML, ChatTemplateKind::Llama3, ChatTemplateKind::Gemma,
                      ChatTemplateKind::Unknown}) {
        const std::string what = error_of(kind, {{"user", "a"}, {"tool", "b"}});
        EXPECT_NE(what.find("message 1"), std::string::npos) << what;
        EXPECT_NE(what.find("'tool'"), std::string::npos) << what;
    }
}

TEST(ChatRenderTest, UnknownKindIsChatMLWithAWarning) {
    const auto r = render_chat(ChatTemplateKind::Unknown, kSysUser, true);
    EXPECT_TRUE(r.unknown_template);
    EXPECT_EQ(r.text, render_chat(ChatTemplateKind::ChatML, kSysUser, true).text);
}

TEST(ChatPythonStripTest, MatchesStrSplitWhitespace) {
    EXPECT_EQ(python_strip(" \t\n\v\f\rx y\r\n"), "x y");
    EXPECT_EQ(python_strip("\x1c\x1d\x1e\x1fx"), "x");
    EXPECT_EQ(python_strip("\u00a0\u3000x\u2003\u2028\u2029\u202f\u205f\u1680"), "x");
    EXPECT_EQ(python_strip("\u0085x\u0085"), "x");
    // Not whitespace to Python: ZERO WIDTH SPACE, BOM, \x00.
    EXPECT_EQ(python_strip("\u200bx\ufeff"), "\u200bx\ufeff");
    EXPECT_EQ(python_strip(std::string("\0x\0", 3)), std::string("\0x\0", 3));
    EXPECT_EQ(python_strip("   "), "");
    EXPECT_EQ(python_strip(""), "");
    EXPECT_EQ(python_strip(" Grüße 🌍 "), "Grüße 🌍");
    // Invalid UTF-8 at an end is content, not whitespace; an overlong space is not a space.
    EXPECT_EQ(python_strip(" \xff "), "\xff");
    EXPECT_EQ(python_strip("\xc0\xa0x"), "\xc0\xa0x");
    EXPECT_EQ(python_strip("x\xe3\x80"), "x\xe3\x80");  // truncated U+3000
}

}  // namespace
}  // namespace fluoro
