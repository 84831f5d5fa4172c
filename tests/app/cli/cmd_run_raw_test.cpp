// `fluoro run --raw` end to end on SmolLM2: a plain completion goes through the Engine like a chat,
// so it combines with --save (the stored run says it was raw and holds the untemplated prompt),
// --spec and --kv-policy; --system is refused with it. And the chat template's fallback is
// announced (on a tiny model with no template), but not for a raw prompt, which uses none.
// Skipped when the binary or the model is missing.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "app/cli/fluoro_cli.h"
#include "gguf/test_model.h"
#include "store/store.h"
#include "test_models.h"
#include "test_temp.h"

namespace fluoro {
namespace {

using test::fluoro_binary;
using test::quoted;

// Writes the tiny test model without the chat template its vocabulary always brings.
void write_model_without_template(const std::filesystem::path& path) {
    gguf::GgufWriter w = gguf::make_test_model(gguf::TestModelSpec{});
    ASSERT_TRUE(w.erase("tokenizer.chat_template"));
    w.write(path);
}

const std::string kPrompt = "Once upon a time";

test::CliResult run_raw(const std::filesystem::path& model, const std::string& args) {
    return test::run_fluoro("run --raw " + quoted(model.string()) + quoted(kPrompt) + args);
}

TEST(CmdRunRaw, SaveStoresAnHonestRawRun) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    if (!std::filesystem::exists(fluoro_binary())) GTEST_SKIP() << "no fluoro binary";
    const auto db = test::unique_temp_path("cmd_run_raw.db");
    std::filesystem::remove(db);
    const test::CliResult r =
        run_raw(path, "-n 8 -t 2 --temp 0 --save --db " + quoted(db.string()));
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_EQ(r.out.rfind(kPrompt, 0), 0u) << r.out;  // the completion continues the prompt
    EXPECT_NE(r.out.find("saved as run"), std::string::npos) << r.out;
    app::Store store(db);
    const auto list = store.list_conversations();
    ASSERT_EQ(list.size(), 1u);
    const app::ConversationRecord c = store.load_conversation(list[0].id);
    ASSERT_EQ(c.runs.size(), 1u);
    EXPECT_NE(c.runs[0].settings_json.find("\"raw\":true"), std::string::npos)
        << c.runs[0].settings_json;
    // Untemplated: the prompt's pieces are its text (after a BOS when the vocabulary adds one).
    std::string prompt_text;
    for (const std::string& p : c.runs[0].prompt_pieces) prompt_text += p;
    EXPECT_EQ(prompt_text.find("<|im_start|>"), std::string::npos) << prompt_text;
    EXPECT_NE(prompt_text.find(kPrompt), std::string::npos) << prompt_text;
    ASSERT_GE(c.messages.size(), 2u);
    EXPECT_EQ(c.messages[0].content, kPrompt);
    std::filesystem::remove(db);
}

TEST(CmdRunRaw, SpeculativeDecodingRuns) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    if (!std::filesystem::exists(fluoro_binary())) GTEST_SKIP() << "no fluoro binary";
    // A prompt that repeats itself, so prompt lookup finds drafts.
    const test::CliResult r = test::run_fluoro(
        "run --raw " + quoted(path.string()) +
        quoted("The cat sat on the mat. The cat sat on the mat. The cat sat on the mat. The") +
        "-n 24 -t 2 --temp 0 --spec prompt_lookup");
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_NE(r.out.find("decode "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("drafts accepted"), std::string::npos) << r.out;
}

TEST(CmdRunRaw, KvPolicyStreamingRunsPastTheContextWhereFullStops) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    if (!std::filesystem::exists(fluoro_binary())) GTEST_SKIP() << "no fluoro binary";
    const std::string base = "-n 100 -c 64 -t 2 --temp 0";
    const test::CliResult full = run_raw(path, base);
    EXPECT_EQ(full.rc, 0) << full.out;
    EXPECT_NE(full.out.find("stop: context_full"), std::string::npos) << full.out;
    const test::CliResult streaming = run_raw(path, base + " --kv-policy streaming");
    EXPECT_EQ(streaming.rc, 0) << streaming.out;
    EXPECT_NE(streaming.out.find("decode 100 tok"), std::string::npos) << streaming.out;
    EXPECT_NE(streaming.out.find("stop: max_tokens"), std::string::npos) << streaming.out;
}

TEST(CmdRunRaw, SystemPromptIsRefused) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    if (!std::filesystem::exists(fluoro_binary())) GTEST_SKIP() << "no fluoro binary";
    const test::CliResult r = run_raw(path, "-n 4 -t 2 --system 'Be brief.'");
    EXPECT_NE(r.rc, 0) << r.out;
    EXPECT_NE(r.out.find("cannot be combined with --raw"), std::string::npos) << r.out;
}

TEST(CmdRun, UnknownChatTemplateIsAnnounced) {
    if (!std::filesystem::exists(fluoro_binary())) GTEST_SKIP() << "no fluoro binary";
    const auto model = test::unique_temp_path("cmd_run_no_template.gguf");
    write_model_without_template(model);  // architecture llama: nothing implies a template
    const std::string args = quoted(model.string()) + "'hello' -n 2 -t 1 -c 256 --temp 0";
    const test::CliResult chat = test::run_fluoro("run " + args);
    EXPECT_EQ(chat.rc, 0) << chat.out;
    EXPECT_NE(chat.out.find("warning: no chat template in the file and its architecture 'llama' "
                            "implies none; using ChatML"),
              std::string::npos)
        << chat.out;
    const test::CliResult raw = test::run_fluoro("run --raw " + args);
    EXPECT_EQ(raw.rc, 0) << raw.out;
    EXPECT_EQ(raw.out.find("no chat template"), std::string::npos) << raw.out;
    std::filesystem::remove(model);
}

}  // namespace
}  // namespace fluoro
