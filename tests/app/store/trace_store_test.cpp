// Schema v10: a traced step's timeline (StepEvent::trace, telemetry level Trace) is stored with the
// step, replayed, exported and imported exactly; a run recorded at another level stores none; a
// malformed trace, in a blob or a document, is refused naming what is wrong and where.
#include <gtest/gtest.h>

#include <cstring>

#include "core/error.h"
#include "export/json_export.h"
#include "replay/replay.h"
#include "store/blob_codec.h"
#include "store/schema.h"
#include "store/sqlite_db.h"
#include "store/store.h"
#include "store_test_util.h"

namespace fluoro::app {
namespace {

using test::synthetic_run;
using test::synthetic_trace;
using test::temp_db;

std::vector<Event> traced_run() {
    std::vector<Event> ev = synthetic_run(1, 1, RunKind::Send, 0, "hello", {"a", "b", "c"});
    for (Event& e : ev)
        if (auto* s = std::get_if<StepEvent>(&e))
            s->trace = synthetic_trace(s->start_ns, int32_t(s->tokens));
    return ev;
}

void expect_same(const StepTrace& a, const StepTrace& b) {
    EXPECT_EQ(a.names, b.names);
    EXPECT_EQ(a.threads, b.threads);
    EXPECT_EQ(a.dropped, b.dropped);
    ASSERT_EQ(a.ops.size(), b.ops.size());
    for (size_t i = 0; i < a.ops.size(); ++i) {
        EXPECT_EQ(a.ops[i].start_ns, b.ops[i].start_ns);
        EXPECT_EQ(a.ops[i].end_ns, b.ops[i].end_ns);
        EXPECT_EQ(a.ops[i].name, b.ops[i].name);
        EXPECT_EQ(a.ops[i].layer, b.ops[i].layer);
        EXPECT_EQ(a.ops[i].rows, b.ops[i].rows);
        EXPECT_EQ(a.ops[i].category, b.ops[i].category);
        EXPECT_EQ(a.ops[i].bytes, b.ops[i].bytes);
        EXPECT_EQ(a.ops[i].flops, b.ops[i].flops);
        EXPECT_EQ(a.ops[i].weight_type, b.ops[i].weight_type);
        EXPECT_EQ(a.ops[i].shape, b.ops[i].shape);
    }
    ASSERT_EQ(a.workers.size(), b.workers.size());
    for (size_t i = 0; i < a.workers.size(); ++i) {
        EXPECT_EQ(a.workers[i].start_ns, b.workers[i].start_ns);
        EXPECT_EQ(a.workers[i].end_ns, b.workers[i].end_ns);
        EXPECT_EQ(a.workers[i].worker, b.workers[i].worker);
        EXPECT_EQ(a.workers[i].tasks, b.workers[i].tasks);
    }
}

void expect_traced(const std::vector<StepEvent>& steps) {
    ASSERT_EQ(steps.size(), 3u);
    for (const StepEvent& s : steps) {
        ASSERT_NE(s.trace, nullptr) << "step " << s.index;
        expect_same(*s.trace, *synthetic_trace(s.start_ns, int32_t(s.tokens)));
    }
}

TEST(TraceStore, TimelinesAreStoredReplayedExportedAndImported) {
    const auto path = temp_db("traces");
    const int64_t id = test::record_events(path, traced_run());
    Store store(path);
    expect_traced(store.load_run(id).steps);

    const ConversationRecord c = store.load_conversation(store.conversation_of_run(id));
    std::vector<StepEvent> replayed;
    for (const Event& e : run_events(c, c.runs.at(0)))
        if (const auto* s = std::get_if<StepEvent>(&e)) replayed.push_back(*s);
    expect_traced(replayed);

    const nlohmann::json doc = conversation_to_json(c);
    const ConversationRecord back = conversation_from_json(doc);
    expect_traced(back.runs.at(0).steps);
    EXPECT_EQ(conversation_to_json(back).dump(), doc.dump());
}

TEST(TraceStore, AnUntracedRunStoresNone) {
    const auto path = temp_db("traces_none");
    const int64_t id =
        test::record_events(path, synthetic_run(1, 1, RunKind::Send, 0, "hi", {"a", "b"}));
    Store store(path);
    for (const StepEvent& s : store.load_run(id).steps) EXPECT_EQ(s.trace, nullptr);
    EXPECT_EQ(store.db().query_int("SELECT count(*) FROM steps WHERE length(trace) > 0"), 0);
    const nlohmann::json doc =
        conversation_to_json(store.load_conversation(store.conversation_of_run(id)));
    for (const auto& s : doc["runs"][0]["steps"]) EXPECT_FALSE(s.contains("trace"));
}

// A version 9 file (the steps table without the trace column) holding a run: migrated to the
// current version, its steps read untraced, and the file then takes traced steps.
TEST(TraceStore, AVersion9FileIsMigratedWithItsStepsKept) {
    const auto path = temp_db("traces_v9");
    const int64_t old =
        test::record_events(path, synthetic_run(1, 1, RunKind::Send, 0, "hi", {"a", "b"}));
    {
        Database raw(path, SQLITE_OPEN_READWRITE);
        raw.exec(std::string(test::kBackToV10) +
                 "ALTER TABLE steps DROP COLUMN trace; PRAGMA user_version = 9");
    }
    {
        Store store(path);
        EXPECT_EQ(store.db().query_int("PRAGMA user_version"), kSchemaVersion);
        const RunRecord r = store.load_run(old);
        ASSERT_EQ(r.steps.size(), 2u);
        for (const StepEvent& s : r.steps) EXPECT_EQ(s.trace, nullptr);
    }
    const int64_t traced = test::record_events(path, traced_run());
    EXPECT_NE(traced, old);
    Store store(path);
    expect_traced(store.load_run(traced).steps);
}

void refused_blob(const std::vector<uint8_t>& blob, const std::string& what) {
    try {
        decode_trace(blob);
        ADD_FAILURE() << "decoded: " << what;
    } catch (const StoreError& e) {
        EXPECT_EQ(e.code(), SQLITE_CORRUPT);
        EXPECT_NE(std::string(e.what()).find(what), std::string::npos)
            << e.what() << " (wanted: " << what << ")";
    }
}

TEST(TraceStore, MalformedBlobsAreRefused) {
    EXPECT_EQ(decode_trace({}), nullptr);
    const auto good = synthetic_trace(0);
    const std::vector<uint8_t> blob = encode_trace(good.get());
    expect_same(*decode_trace(blob), *good);

    const std::vector<uint8_t> cut(blob.begin(), blob.end() - 1);
    refused_blob(cut, "21 worker spans in 503 bytes");  // the last span cut short
    std::vector<uint8_t> extra = blob;
    extra.push_back(0);
    refused_blob(extra, "1 bytes after the worker spans");
    // A name count of 2^32 - 1 over a few hundred bytes: refused before anything is allocated.
    std::vector<uint8_t> forged = blob;
    const uint32_t huge = 0xFFFFFFFFu;
    std::memcpy(forged.data(), &huge, sizeof huge);
    refused_blob(forged, "names in");
    // The first op's name index (after the names, threads and dropped, the op count, two times)
    // pointing past the table.
    size_t at = 4;
    for (const std::string& n : good->names) at += 4 + n.size();
    at += 4 + 8 + 4 + 16;
    std::vector<uint8_t> beyond = blob;
    const int32_t nine = 9;
    std::memcpy(beyond.data() + at, &nine, sizeof nine);
    refused_blob(beyond, "op 0: name 9 outside the 6 names");
    // The QKV matmul (op 2)'s weight type, 57 bytes per op on from op 0 and 45 into the record:
    // a type id ggml does not define.
    std::vector<uint8_t> untyped = blob;
    const int32_t type77 = 77;
    std::memcpy(untyped.data() + at - 16 + 2 * 57 + 45, &type77, sizeof type77);
    refused_blob(untyped, "op 2: weight type 77 unknown");

    // In a file: the error names the file and the step.
    const auto path = temp_db("traces_bad");
    const int64_t id = test::record_events(path, traced_run());
    Store store(path);
    store.db().exec("UPDATE steps SET trace = x'0100' WHERE idx = 2");
    try {
        store.load_run(id);
        FAIL() << "a truncated trace was read";
    } catch (const StoreError& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find(path.string()), std::string::npos) << msg;
        EXPECT_NE(msg.find("step 2"), std::string::npos) << msg;
        EXPECT_NE(msg.find("malformed trace blob"), std::string::npos) << msg;
    }
}

TEST(TraceStore, MalformedDocumentsAreRefusedNamingTheStep) {
    const auto path = temp_db("traces_doc");
    const int64_t id = test::record_events(path, traced_run());
    Store store(path);
    const nlohmann::json good =
        conversation_to_json(store.load_conversation(store.conversation_of_run(id)));
    const auto refused = [](const nlohmann::json& doc, const std::string& what) {
        try {
            conversation_from_json(doc);
            ADD_FAILURE() << "imported: " << what;
        } catch (const Error& e) {
            const std::string msg = e.what();
            EXPECT_NE(msg.find(what), std::string::npos) << msg;
            EXPECT_NE(msg.find("trace of step 1"), std::string::npos) << msg;
        }
    };
    nlohmann::json j = good;
    j["runs"][0]["steps"][1]["trace"]["ops"][0][5] = "flops";
    refused(j, "unknown category 'flops'");
    j = good;
    j["runs"][0]["steps"][1]["trace"]["ops"][0] = {1, 2, 3};
    refused(j, "not an array of 10");
    j = good;
    j["runs"][0]["steps"][1]["trace"]["ops"][2][8] = "q9_9";
    refused(j, "unknown weight type 'q9_9'");
    j = good;
    j["runs"][0]["steps"][1]["trace"]["workers"][0][2] = 5;
    refused(j, "worker 5 outside [0, 2)");
    j = good;
    j["runs"][0]["steps"][1]["trace"]["ops"][2][1] = 0;
    refused(j, "op 2: ends before it starts");
    j = good;
    j["runs"][0]["steps"][1]["trace"]["ops"][0][0] = "soon";
    refused(j, "type must be number");
}

}  // namespace
}  // namespace fluoro::app
