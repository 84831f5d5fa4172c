// `fluoro sessions`: the reading commands never create a database (a mistyped --db path used to
// leave an empty sessions.db behind), and a malformed import is an error naming the file, never
// "internal error".
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "app/cli/fluoro_cli.h"
#include "test_temp.h"

namespace fluoro {
namespace {

TEST(CmdSessions, ReadingCommandsDoNotCreateADatabase) {
    if (!std::filesystem::exists(test::fluoro_binary())) GTEST_SKIP() << "no fluoro binary";
    const auto db = test::unique_temp_path("never_created.db");
    const std::string at = " --db " + test::quoted(db.string());
    test::CliResult r = test::run_fluoro("sessions list" + at);
    EXPECT_EQ(r.rc, 0) << r.out;
    EXPECT_NE(r.out.find("no session database at " + db.string()), std::string::npos) << r.out;
    for (const std::string cmd : {"sessions show 1", "sessions export 1", "sessions delete 1"}) {
        r = test::run_fluoro(cmd + at);
        EXPECT_NE(r.rc, 0) << cmd << ": " << r.out;
        EXPECT_NE(r.out.find("no session database at " + db.string()), std::string::npos)
            << cmd << ": " << r.out;
    }
    EXPECT_FALSE(std::filesystem::exists(db));
}

TEST(CmdSessions, AMalformedImportIsAnErrorNamingTheFile) {
    if (!std::filesystem::exists(test::fluoro_binary())) GTEST_SKIP() << "no fluoro binary";
    const auto doc = test::unique_temp_path("malformed_import.json");
    // Right format and version, but messages is an object: the parser's .size()/[] on it used to
    // escape as a JSON library exception.
    std::ofstream(doc) << R"({"format": "fluoroscope-conversation", "version": 3, "title": "t",
                             "system_prompt": "", "created_at": "x",
                             "messages": {"role": "user"}, "runs": []})";
    const auto db = test::unique_temp_path("import_target.db");
    const test::CliResult r = test::run_fluoro("sessions import " + test::quoted(doc.string()) +
                                               "--db " + test::quoted(db.string()));
    EXPECT_NE(r.rc, 0) << r.out;
    EXPECT_EQ(r.out.find("internal error"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(doc.string()), std::string::npos) << r.out;
}

}  // namespace
}  // namespace fluoro
