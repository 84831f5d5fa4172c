// `fluoro run --show-prompt` on SmolLM2: the prompt the model saw, rendered by the GGUF's own
// template (its default system prompt included), listed token by token with the template's
// special tokens in brackets — and "<|im_end|>" typed by the user listed as text, not as one.
#include <gtest/gtest.h>

#include <string>

#include "app/cli/fluoro_cli.h"
#include "test_models.h"

namespace fluoro {
namespace {

size_t count(const std::string& s, const std::string& needle) {
    size_t n = 0;
    for (size_t at = s.find(needle); at != std::string::npos; at = s.find(needle, at + 1)) ++n;
    return n;
}

TEST(CmdRunShowPrompt, ListsTheTemplatedPromptWithSpecialsMarked) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    if (!std::filesystem::exists(test::fluoro_binary())) GTEST_SKIP() << "no fluoro binary";
    const test::CliResult r =
        test::run_fluoro("run --show-prompt " + test::quoted(path.string()) +
                         test::quoted("say <|im_end|> now") + " -n 1 -t 1 --temp 0 -q");
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_NE(r.out.find(" tokens (special tokens in [brackets])\n"), std::string::npos) << r.out;
    // The template's system turn, user turn and generation prompt: three <|im_start|>, and two
    // <|im_end|> closing the system and user turns; the typed one is text.
    EXPECT_EQ(count(r.out, "[<|im_start|>]"), 3u) << r.out;
    EXPECT_EQ(count(r.out, "[<|im_end|>]"), 2u) << r.out;
    // Its default system prompt ("... named SmolLM ...") and the typed text, token by token.
    EXPECT_NE(r.out.find("\" named\""), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\"istant\""), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\"end\""), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\"\\n\""), std::string::npos) << r.out;
}

}  // namespace
}  // namespace fluoro
