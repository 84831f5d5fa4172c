// `fluoro cache advise` end to end: runs written into a temporary session database, read back
// through the command's own code path (cache_advise_report), and the binary's errors for a
// missing or corrupt database.
#include "advisor/cache_advise.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "app/advisor/advisor_db_util.h"
#include "app/advisor/advisor_test_util.h"
#include "app/cli/fluoro_cli.h"
#include "app/store/store_test_util.h"
#include "core/error.h"
#include "store/store.h"

namespace fluoro::app {
namespace {

std::filesystem::path timestamp_db(const std::string& name) {
    const auto db = test::temp_db(name);
    test::write_timestamp_runs(db);
    return db;
}

TEST(CacheAdvise, JsonReportOfRecordedRuns) {
    const auto db = timestamp_db("advise_json");
    const auto j = nlohmann::json::parse(cache_advise_report({db, 0, "", true}));
    EXPECT_EQ(j["model"], "small.gguf");  // the latest run's model
    EXPECT_EQ(j["requests_analysed"], 5);
    ASSERT_EQ(j["other_models"].size(), 1u);
    EXPECT_EQ(j["other_models"][0]["model"], "other.gguf");
    ASSERT_EQ(j["requests"].size(), 5u);
    EXPECT_EQ(j["requests"][0]["id"], "run 2");
    EXPECT_EQ(j["requests"][0]["reuse"], "cold");
    EXPECT_EQ(j["requests"][1]["divergence"]["token"], 14);  // "...09:" then "11" vs "10"
    ASSERT_GE(j["breakers"].size(), 1u);
    EXPECT_EQ(j["breakers"][0]["class"], "timestamp");
    EXPECT_EQ(j["breakers"][0]["message"], "system");
    EXPECT_EQ(j["breakers"][0]["message_token"], 3);  // after "Now", ":", " "
    EXPECT_EQ(j["breakers"][0]["token"], 6);          // after "<|im_start|>", "system", "\n"
    EXPECT_EQ(j["breakers"][0]["text"], "2024-05-01 09:11:00");
    EXPECT_EQ(j["breakers"][0]["occurrences"], 4);
    EXPECT_TRUE(j["stable_first"]["estimate"].get<bool>());
    EXPECT_GT(j["stable_first"]["hit_rate"].get<double>(),
              j["recorded"]["hit_rate"].get<double>() + 0.4);
    EXPECT_EQ(j["served"]["cached_tokens"], 10);
}

TEST(CacheAdvise, TextReportFiltersByModelAndLast) {
    const auto db = timestamp_db("advise_text");
    const std::string all = cache_advise_report({db, 0, "", false});
    EXPECT_NE(all.find("5 recorded request(s) on small.gguf"), std::string::npos) << all;
    EXPECT_NE(all.find("also recorded: other.gguf (1 runs"), std::string::npos) << all;
    EXPECT_NE(all.find("fix: move the timestamp at token 3 of the system message"),
              std::string::npos)
        << all;
    EXPECT_NE(all.find("stable first (est.)"), std::string::npos) << all;

    const std::string other = cache_advise_report({db, 0, "OTHER", false});
    EXPECT_NE(other.find("1 recorded request(s) on other.gguf"), std::string::npos) << other;
    const auto last = nlohmann::json::parse(cache_advise_report({db, 2, "small", true}));
    EXPECT_EQ(last["requests_analysed"], 2);
    EXPECT_EQ(last["requests"][0]["id"], "run 5");
    const std::string none = cache_advise_report({db, 0, "nothing-like-this", false});
    EXPECT_NE(none.find("no recorded requests"), std::string::npos) << none;
}

TEST(CacheAdvise, MissingDatabaseIsAClearError) {
    const auto db = test::temp_db("advise_missing");
    EXPECT_THROW(cache_advise_report({db, 0, "", false}), Error);
    EXPECT_FALSE(std::filesystem::exists(db));  // not created by looking
    const auto r = fluoro::test::run_fluoro("cache advise --db '" + db.string() + "'");
    EXPECT_NE(r.rc, 0);
    EXPECT_NE(r.out.find("no session database at"), std::string::npos) << r.out;
}

TEST(CacheAdvise, CorruptDatabaseIsAClearError) {
    const auto db = test::temp_db("advise_corrupt");
    test::write_bytes(db, "this is not a database, just some bytes\n");
    const auto r = fluoro::test::run_fluoro("cache advise --db '" + db.string() + "'");
    EXPECT_NE(r.rc, 0);
    EXPECT_NE(r.out.find("not a Fluoroscope session database"), std::string::npos) << r.out;
}

TEST(CacheAdvise, CommandLinePrintsTheReport) {
    const auto db = timestamp_db("advise_cli");
    const auto r = fluoro::test::run_fluoro("cache advise --db '" + db.string() + "' --last 3");
    EXPECT_EQ(r.rc, 0) << r.out;
    EXPECT_NE(r.out.find("Cache breakers"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("timestamp at token 3 of the system message"), std::string::npos) << r.out;
    const auto bad = fluoro::test::run_fluoro("cache advise --db '" + db.string() + "' --last 0");
    EXPECT_NE(bad.rc, 0);
}

}  // namespace
}  // namespace fluoro::app
