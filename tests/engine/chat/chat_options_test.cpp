// chat_options_from_template: SmolLM2's default system prompt is found, other ChatML templates get
// their own (or none), and look-alike literals are ignored.
#include <gtest/gtest.h>

#include <string>

#include "chat/chat_options.h"

namespace fluoro {
namespace {

// SmolLM2-135M-Instruct's template as stored in its GGUF (real newlines inside the literals).
const std::string kSmolLM2 =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
    "Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ "
    "'<|im_start|>assistant\n' }}{% endif %}";

TEST(ChatOptionsTest, SmolLM2DefaultSystemPrompt) {
    EXPECT_EQ(chat_options_from_template(kSmolLM2).default_system_prompt,
              "You are a helpful AI assistant named SmolLM, trained by Hugging Face");
}

TEST(ChatOptionsTest, EscapedNewlinesAndDoubleQuotes) {
    const std::string t =
        "{% if messages[0]['role'] != 'system' %}{{ \"<|im_start|>system\\nYou're \\\"it\\\".\\t"
        "<|im_end|>\\n\" }}{% endif %}";
    EXPECT_EQ(chat_options_from_template(t).default_system_prompt, "You're \"it\".\t");
}

TEST(ChatOptionsTest, QwenStyleTemplateGetsItsOwnPrompt) {
    // The first system literal is concatenated with the user's text (no default); the second is.
    const std::string t =
        "{%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\\n' + "
        "messages[0]['content'] + '<|im_end|>\\n' }}{%- else %}{{- '<|im_start|>system\\nYou are "
        "Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}{%- endif %}";
    EXPECT_EQ(chat_options_from_template(t).default_system_prompt,
              "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.");
}

TEST(ChatOptionsTest, NoDefaultInGenericOrOtherTemplates) {
    const std::string generic =
        "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
        "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}";
    EXPECT_FALSE(chat_options_from_template(generic).default_system_prompt);
    EXPECT_FALSE(chat_options_from_template("").default_system_prompt);
    EXPECT_FALSE(
        chat_options_from_template("{{ bos_token }}<start_of_turn>").default_system_prompt);
    // Not a literal of its own; an unknown escape; extra text after <|im_end|>; unterminated.
    EXPECT_FALSE(
        chat_options_from_template("x<|im_start|>system\nA<|im_end|>\n").default_system_prompt);
    EXPECT_FALSE(chat_options_from_template("'<|im_start|>system\\nA\\u00e9<|im_end|>\\n'")
                     .default_system_prompt);
    EXPECT_FALSE(chat_options_from_template("'<|im_start|>system\\nA<|im_end|>\\n\\n'")
                     .default_system_prompt);
    EXPECT_FALSE(
        chat_options_from_template("'<|im_start|>system\\nA<|im_end|>\\n").default_system_prompt);
}

TEST(ChatOptionsTest, EmptyDefaultPromptIsStillAPrompt) {
    EXPECT_EQ(
        chat_options_from_template("'<|im_start|>system\n<|im_end|>\n'").default_system_prompt, "");
}

}  // namespace
}  // namespace fluoro
