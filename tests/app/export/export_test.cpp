// Exports of a stored conversation: JSON export -> import -> export gives identical bytes; bad
// documents are refused naming the field; the Chrome trace has the fields each event type needs,
// microsecond times, and slices properly nested per track; CSV quotes what needs quoting;
// the Markdown transcript holds every message and marks the incomplete one.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "../store/store_test_util.h"
#include "core/error.h"
#include "export/csv_export.h"
#include "export/json_export.h"
#include "export/markdown_export.h"
#include "export/trace_export.h"
#include "store/store_writer.h"

namespace fluoro::app {
namespace {

using nlohmann::json;

ConversationRecord recorded(const std::string& name) {
    const auto path = test::temp_db(name);
    {
        StoreWriter w(path);
        for (const auto& e : test::synthetic_run(1, 1, RunKind::Send, 0, "Say \"hi\"",
                                                 {"Hi", ",\n", " \"you\"", "!"}))
            w.record(e);
        for (const auto& e : test::synthetic_run(2, 1, RunKind::Regenerate, 1, "", {"Hel"}, false))
            w.record(e);
    }
    Store store(path);
    return store.load_conversation(store.list_conversations().at(0).id);
}

TEST(JsonExport, ExportImportExportIsIdentical) {
    const ConversationRecord c = recorded("json_roundtrip");
    const std::string first = conversation_to_json(c).dump(1);
    const auto path = test::temp_db("json_import");
    Store store(path);
    // Ids differ in the second database.
    store.add_message(store.add_conversation("already here", "", "t"), std::nullopt, "user", "x",
                      true, "t");
    const int64_t id = store.insert_conversation(conversation_from_json(json::parse(first)));
    EXPECT_EQ(id, 2);
    const ConversationRecord back = store.load_conversation(id);
    EXPECT_NE(back.messages[0].id, c.messages[0].id);
    EXPECT_EQ(conversation_to_json(back).dump(1), first);
    // And the document holds the details, not just the text.
    const json j = json::parse(first);
    EXPECT_EQ(j["runs"][0]["tokens"].size(), 4u);
    EXPECT_EQ(j["runs"][0]["steps"][1]["op_ns"]["matmul"], 501);
    EXPECT_TRUE(j["runs"][1]["stop_reason"].is_null());
    EXPECT_EQ(j["messages"][2]["parent"], 0);
}

TEST(JsonExport, BadDocumentsAreRefusedNamingTheField) {
    EXPECT_THROW(conversation_from_json(json{{"format", "something else"}}), Error);
    json j = conversation_to_json(recorded("json_bad"));
    j["runs"][0]["tokens"][1].erase("piece");
    try {
        conversation_from_json(j);
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("runs[0].tokens has no field 'piece'"),
                  std::string::npos)
            << e.what();
    }
    j = conversation_to_json(recorded("json_bad2"));
    j["messages"][1]["parent"] = 5;
    EXPECT_THROW(conversation_from_json(j), Error);
}

TEST(ChromeTrace, EventsHaveTheirFieldsAndSlicesNest) {
    const ConversationRecord c = recorded("trace");
    const json trace = run_to_chrome_trace(c.runs.at(0));
    ASSERT_TRUE(trace["traceEvents"].is_array());
    std::map<int, std::vector<std::pair<double, double>>> slices;  // tid -> (ts, end)
    std::map<std::string, int> by_phase;
    std::set<std::string> counters, thread_names;
    for (const auto& e : trace["traceEvents"]) {
        const std::string ph = e.at("ph");
        ++by_phase[ph];
        EXPECT_TRUE(e.at("name").is_string());
        EXPECT_TRUE(e.at("pid").is_number_integer());
        if (ph == "M") {
            EXPECT_TRUE(e.at("args").is_object());
            if (e["name"] == "thread_name") thread_names.insert(e["args"]["name"]);
            continue;
        }
        EXPECT_TRUE(e.at("ts").is_number());
        EXPECT_GE(e["ts"].get<double>(), 0);
        if (ph == "X") {
            EXPECT_TRUE(e.at("tid").is_number_integer());
            EXPECT_GE(e.at("dur").get<double>(), 0);
            slices[e["tid"]].push_back({e["ts"], e["ts"].get<double>() + e["dur"].get<double>()});
        } else if (ph == "C") {
            ASSERT_TRUE(e.at("args").is_object());
            for (const auto& [k, v] : e["args"].items()) EXPECT_TRUE(v.is_number()) << k;
            counters.insert(e["name"]);
        } else if (ph == "i") {
            EXPECT_TRUE(e.at("s") == "t" || e.at("s") == "p" || e.at("s") == "g");
        } else {
            ADD_FAILURE() << "unexpected phase " << ph;
        }
    }
    EXPECT_EQ(by_phase["X"], 4 + 4 * 2);  // 4 steps, each with matmul and sampling slices
    EXPECT_EQ(by_phase["i"], 4 + 1);      // tokens, one cache event
    EXPECT_TRUE(counters.count("tok/s"));
    EXPECT_TRUE(counters.count("KV bytes"));
    EXPECT_TRUE(counters.count("cache hit rate"));
    EXPECT_TRUE(thread_names.count("steps"));
    // The synthetic steps start at multiples of 1000 ns: microseconds, not nanoseconds.
    EXPECT_DOUBLE_EQ(slices[1][0].first, 0.0);
    // Proper nesting per track: sorted by start (longer first at a tie), every slice either lies
    // inside the enclosing open slice or starts after it ended.
    for (auto& [tid, list] : slices) {
        std::sort(list.begin(), list.end(), [](auto a, auto b) {
            return a.first != b.first ? a.first < b.first : a.second > b.second;
        });
        std::vector<double> open;
        for (const auto& [ts, end] : list) {
            while (!open.empty() && ts >= open.back() - 1e-9) open.pop_back();
            if (!open.empty()) {
                EXPECT_LE(end, open.back() + 1e-9) << "tid " << tid << " at " << ts;
            }
            open.push_back(end);
        }
    }
}

TEST(CsvExport, OneQuotedRowPerToken) {
    const std::string csv = run_tokens_csv(recorded("csv").runs.at(0));
    EXPECT_EQ(csv.substr(0, csv.find("\r\n")), "index,token_id,piece,logprob,prob,t_ms,top");
    EXPECT_NE(csv.find("1,11,\",\n\",-1.5,"), std::string::npos) << csv;  // newline kept, quoted
    EXPECT_NE(csv.find("2,12,\" \"\"you\"\"\","), std::string::npos) << csv;  // quotes doubled
    EXPECT_NE(csv.find("\"10:-0.5 3:-2.25\""), std::string::npos) << csv;
}

TEST(MarkdownExport, TranscriptWithStatsAndTheIncompleteReplyMarked) {
    const std::string md = conversation_markdown(recorded("md"));
    EXPECT_EQ(md.rfind("# Say \"hi\"", 0), 0u);
    EXPECT_NE(md.find("**User:**\n\nSay \"hi\""), std::string::npos);
    EXPECT_NE(md.find("Hi,\n \"you\"!"), std::string::npos);
    EXPECT_NE(md.find("**Assistant:** *(incomplete)*\n\nHel"), std::string::npos) << md;
    EXPECT_NE(md.find("stop: eog"), std::string::npos);
    EXPECT_NE(md.find("stop: interrupted"), std::string::npos);
}

}  // namespace
}  // namespace fluoro::app
