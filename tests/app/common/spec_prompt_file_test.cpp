// `fluoro bench spec --prompts FILE` (common/spec_prompt_file.h): JSON Lines of prompts, with
// errors that name the file, the line and the problem.
#include "common/spec_prompt_file.h"

#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"
#include "test_temp.h"

namespace fluoro::app {
namespace {

// The Error's message, or "" when parsing succeeded.
std::string parse_error(std::string_view text) {
    try {
        parse_spec_prompts(text, "p.jsonl");
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

TEST(SpecPromptFile, ReadsObjectsPerLineWithDefaults) {
    const auto prompts = parse_spec_prompts(
        "# my prompts\n"
        "{\"category\": \"copy\", \"text\": \"Fix: teh cat\", \"reference\": \"the cat\"}\n"
        "\n"
        "   \n"
        "{\"text\": \"Hello?\"}\r\n",
        "p.jsonl");
    ASSERT_EQ(prompts.size(), 2u);
    EXPECT_EQ(prompts[0].category, "copy");
    EXPECT_EQ(prompts[0].text, "Fix: teh cat");
    EXPECT_EQ(prompts[0].reference, "the cat");
    EXPECT_EQ(prompts[1].category, "custom");
    EXPECT_EQ(prompts[1].text, "Hello?");
    EXPECT_TRUE(prompts[1].reference.empty());
}

TEST(SpecPromptFile, ErrorsNameTheLineAndTheProblem) {
    const std::string ok = "{\"text\": \"a\"}\n";
    EXPECT_NE(parse_error(ok + "{\"text\": \"b\"\n").find("p.jsonl:2: not valid JSON"),
              std::string::npos);
    EXPECT_NE(parse_error("[1, 2]\n").find("p.jsonl:1: expected a JSON object"), std::string::npos);
    EXPECT_NE(parse_error(ok + ok + "{\"category\": \"copy\"}\n").find("p.jsonl:3: \"text\""),
              std::string::npos);
    EXPECT_NE(parse_error("{\"text\": 5}\n").find("\"text\" must be a string"), std::string::npos);
    EXPECT_NE(parse_error("{\"text\": \"\"}\n").find("\"text\" is empty"), std::string::npos);
    EXPECT_NE(parse_error("{\"text\": \"a\", \"reference\": [1]}\n").find("\"reference\" must be"),
              std::string::npos);
    EXPECT_NE(parse_error("{\"text\": \"a\", \"category\": \"\"}\n").find("\"category\" is empty"),
              std::string::npos);
    EXPECT_NE(parse_error("# only a comment\n\n").find("p.jsonl: no prompts"), std::string::npos);
    EXPECT_NE(parse_error("").find("no prompts"), std::string::npos);
}

TEST(SpecPromptFile, ReadsAFileAndNamesAMissingOne) {
    const auto path = test::unique_temp_path("prompts.jsonl");
    {
        std::ofstream f(path);
        f << "{\"category\": \"chat\", \"text\": \"Why?\"}\n";
    }
    const auto prompts = read_spec_prompts(path);
    ASSERT_EQ(prompts.size(), 1u);
    EXPECT_EQ(prompts[0].category, "chat");
    try {
        read_spec_prompts(path.string() + ".missing");
        ADD_FAILURE() << "a missing file was read";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(".missing"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace fluoro::app
