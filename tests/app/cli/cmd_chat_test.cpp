// `fluoro chat` end to end on SmolLM2, its input piped: the slash commands work on the Engine's
// conversation (/set, /system, /stats, /regen, /reset, /help, /bye), a bad value is an error that
// changes nothing, and with --save the answer and its regeneration are stored as two runs of one
// conversation. Skipped when the binary or the model is missing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "app/cli/fluoro_cli.h"
#include "store/store.h"
#include "test_models.h"
#include "test_temp.h"

namespace fluoro {
namespace {

using test::fluoro_binary;
using test::quoted;

size_t count(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

TEST(CmdChat, SlashCommandsDriveTheEnginesConversation) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    if (!std::filesystem::exists(fluoro_binary())) GTEST_SKIP() << "no fluoro binary";
    const auto input = test::unique_temp_path("cmd_chat_input.txt");
    const auto db = test::unique_temp_path("cmd_chat.db");
    std::filesystem::remove(db);
    {
        std::ofstream in(input);
        in << "/help\n"
              "/stats\n"
              "/set temp 0\n"
              "/set top_p 7\n"  // out of range: refused, nothing changes
              "/system You answer in one word.\n"
              "What is the capital of France?\n"
              "/stats\n"
              "/regen\n"
              "/reset\n"
              "/bye\n";
    }
    const test::CliResult r =
        test::run_fluoro("chat " + quoted(path.string()) + "-n 8 -t 2 --save --db " +
                         quoted(db.string()) + "< " + quoted(input.string()));
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_NE(r.out.find("/regen"), std::string::npos) << r.out;  // the help
    EXPECT_NE(r.out.find("(no answer yet)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("temp = 0"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("error: "), std::string::npos) << r.out;  // top_p 7
    EXPECT_NE(r.out.find("(system prompt set)"), std::string::npos) << r.out;
    EXPECT_EQ(count(r.out, "| TTFT "), 3u) << r.out;  // stats: answer, /stats, /regen
    EXPECT_NE(r.out.find("(new conversation)"), std::string::npos) << r.out;
    app::Store store(db);
    const auto list = store.list_conversations();
    ASSERT_EQ(list.size(), 1u);
    const app::ConversationRecord c = store.load_conversation(list[0].id);
    ASSERT_EQ(c.runs.size(), 2u);
    EXPECT_EQ(c.runs[0].kind, "send");
    EXPECT_EQ(c.runs[1].kind, "regenerate");
    EXPECT_NE(c.runs[0].settings_json.find("You answer in one word."), std::string::npos)
        << c.runs[0].settings_json;
    EXPECT_NE(c.runs[0].settings_json.find("\"temperature\":0.0"), std::string::npos)
        << c.runs[0].settings_json;
    std::filesystem::remove(db);
    std::filesystem::remove(input);
}

}  // namespace
}  // namespace fluoro
