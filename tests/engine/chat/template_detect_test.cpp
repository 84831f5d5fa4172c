// detect_chat_template: the family from marker substrings (llama.cpp's precedence), and from the
// architecture when the file carries no template.
#include <gtest/gtest.h>

#include "chat/template_detect.h"

namespace fluoro {
namespace {

TEST(ChatTemplateDetectTest, FromTemplateText) {
    EXPECT_EQ(detect_chat_template("{{'<|im_start|>' + role}}", "llama").kind,
              ChatTemplateKind::ChatML);
    EXPECT_EQ(detect_chat_template("{{ '<start_of_turn>' + role }}", "llama").kind,
              ChatTemplateKind::Gemma);
    EXPECT_EQ(detect_chat_template("<|start_header_id|>' + r + '<|end_header_id|>", "gemma3").kind,
              ChatTemplateKind::Llama3);
    EXPECT_EQ(detect_chat_template("<|im_start|>", "x").source, "template text");
}

TEST(ChatTemplateDetectTest, ChatMLWinsOverGemmaMarkers) {
    EXPECT_EQ(detect_chat_template("<start_of_turn><|im_start|>", "gemma3").kind,
              ChatTemplateKind::ChatML);
}

TEST(ChatTemplateDetectTest, FromArchitectureWhenTheFileHasNone) {
    const auto g = detect_chat_template("", "gemma3");
    EXPECT_EQ(g.kind, ChatTemplateKind::Gemma);
    EXPECT_EQ(g.source, "architecture (no template in file)");
    EXPECT_EQ(detect_chat_template("", "qwen2").kind, ChatTemplateKind::ChatML);
}

TEST(ChatTemplateDetectTest, UnknownFallsBackToChatML) {
    const auto g = detect_chat_template("[INST] {{ content }} [/INST]", "llama");
    EXPECT_EQ(g.kind, ChatTemplateKind::ChatML);
    EXPECT_EQ(g.source, "fallback");
    EXPECT_EQ(detect_chat_template("", "llama").source, "fallback");
}

TEST(ChatTemplateDetectTest, Names) {
    EXPECT_EQ(chat_template_name(ChatTemplateKind::ChatML), "chatml");
    EXPECT_EQ(chat_template_name(ChatTemplateKind::Llama3), "llama3");
    EXPECT_EQ(chat_template_name(ChatTemplateKind::Gemma), "gemma");
    EXPECT_EQ(chat_template_name(ChatTemplateKind::Unknown), "unknown");
}

}  // namespace
}  // namespace fluoro
