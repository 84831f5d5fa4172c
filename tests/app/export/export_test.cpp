// Exports of a stored conversation: JSON export -> import -> export gives identical bytes; bad
// documents are refused naming the field; the Chrome trace has the fields each event type needs,
// microsecond times, and slices properly nested per track; CSV quotes what needs quoting;
// the Markdown transcript holds every message and marks the incomplete one.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "../store/store_test_util.h"
#include "chrome_trace_check.h"
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

// Values of the wrong kind or size deep in a document (issue 38's hostile imports): each is an
// Error saying what is wrong, never an unguarded JSON exception ("internal error") and never a
// snapshot whose shape its weights do not fill.
TEST(JsonExport, MalformedValuesAreErrorsNamingWhatIsWrong) {
    const json good = conversation_to_json(recorded("json_malformed"));
    const auto refused = [](const json& doc, const std::string& what) {
        try {
            conversation_from_json(doc);
            ADD_FAILURE() << "imported: " << what;
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
        }
    };
    json j = good;
    j["runs"][0]["tokens"][0]["top"] = json::array({json::array({7})});  // no logprob
    refused(j, "malformed document");
    j = good;
    j["messages"] = json::object({{"role", "user"}});
    refused(j, "malformed document");
    // 2^32 x 2^32 is 2^64, 0 in 64-bit arithmetic: it matched an empty weights array.
    const json snapshot = {{"step", 0},
                           {"t_ns", 0},
                           {"layer", 0},
                           {"head", 0},
                           {"first_row", 0},
                           {"n_rows", int64_t(1) << 32},
                           {"n_cols", int64_t(1) << 32},
                           {"key_begin", 0},
                           {"weights", json::array()}};
    j = good;
    j["runs"][0]["attention_snapshots"] = json::array({snapshot});
    refused(j, "weights do not match n_rows x n_cols (4294967296 x 4294967296, 0 weights)");
    json rows_only = snapshot;
    rows_only["n_cols"] = 0;  // matches no weights, yet asks a reader to walk 2^32 rows
    j["runs"][0]["attention_snapshots"] = json::array({rows_only});
    refused(j, "weights do not match n_rows x n_cols");
    json fits = snapshot;
    fits["n_rows"] = 2;
    fits["n_cols"] = 3;
    fits["weights"] = json::array({0.1, 0.2, 0.7, 0.3, 0.3, 0.4});
    j["runs"][0]["attention_snapshots"] = json::array({fits});
    EXPECT_EQ(conversation_from_json(j).runs.at(0).attention_snapshots.at(0)->n_rows, 2);
}

ConversationRecord recorded_v3(const std::string& name) {
    const auto path = test::temp_db(name);
    {
        StoreWriter w(path);
        for (const auto& e : test::v3_run(1, 1)) w.record(e);
    }
    Store store(path);
    return store.load_conversation(store.list_conversations().at(0).id);
}

// Every field added with schema v3 survives store -> JSON -> import -> store, byte for byte; a
// prompt piece that is not whole UTF-8 travels as hex.
TEST(JsonExport, TheV3FieldsRoundTrip) {
    const ConversationRecord c = recorded_v3("json_v3");
    const json doc = conversation_to_json(c);
    const std::string first = doc.dump(1);
    EXPECT_EQ(doc["version"], kConversationFormatVersion);
    const json& run = doc["runs"][0];
    EXPECT_EQ(run["prompt_ids"], json({1, 529, 9999, 13}));
    EXPECT_EQ(run["prompt_pieces"][1], "<|user|>");
    EXPECT_EQ(run["prompt_pieces"][2], json({{"hex", "e4"}}));
    EXPECT_EQ(run["drafted_tokens"], 7);
    EXPECT_EQ(run["accepted_tokens"], 5);
    EXPECT_EQ(run["spec_steps"][0]["bonus"], 24);
    EXPECT_EQ(run["spec_steps"][0]["draft_ns"], 150);
    EXPECT_EQ(run["spec_steps"][0]["verify_ns"], 600);
    EXPECT_EQ(run["attention_snapshots"][0]["key_begin"], 8);
    ASSERT_EQ(run["attention_stats"].size(), 2u);
    EXPECT_EQ(run["attention_stats"][0]["heads"].size(), 6u);

    Store store(test::temp_db("json_v3_import"));
    const int64_t id = store.insert_conversation(conversation_from_json(json::parse(first)));
    const ConversationRecord back = store.load_conversation(id);
    EXPECT_EQ(conversation_to_json(back).dump(1), first);
    const RunRecord& r = back.runs.at(0);
    EXPECT_EQ(r.prompt_ids, c.runs[0].prompt_ids);
    EXPECT_EQ(r.prompt_pieces, c.runs[0].prompt_pieces);
    EXPECT_EQ(r.prompt_pieces[2], std::string("\xE4"));
    EXPECT_EQ(r.drafted_tokens, 7);
    EXPECT_EQ(r.accepted_tokens, 5);
    ASSERT_EQ(r.spec_steps.size(), 1u);
    EXPECT_EQ(r.spec_steps[0].bonus, 24);
    EXPECT_EQ(r.spec_steps[0].draft_ns, 150);
    EXPECT_EQ(r.spec_steps[0].verify_ns, 600);
    EXPECT_EQ(r.spec_steps[0].t_ns, 1980);
    ASSERT_EQ(r.attention_snapshots.size(), 1u);
    EXPECT_EQ(r.attention_snapshots[0]->key_begin, 8);
    ASSERT_EQ(r.attention_stats.size(), 2u);
    EXPECT_EQ(r.attention_stats[0].step, 2);
    EXPECT_EQ(r.attention_stats[0].n_keys, 11);
    EXPECT_EQ(r.attention_stats[0].top_k, 4);
    EXPECT_FLOAT_EQ(r.attention_stats[0].threshold, 0.01f);
    EXPECT_FLOAT_EQ(r.attention_stats[0].heads[5].entropy, 4.5f);
}

// A version 1 document (before these fields existed) still imports, with the defaults; in a
// version 2 document they are required, and a malformed one is refused naming the field.
TEST(JsonExport, AVersion1DocumentWithoutTheNewFieldsImports) {
    json j = conversation_to_json(recorded_v3("json_v1_doc"));
    j["version"] = 1;
    json& run = j["runs"][0];
    for (const char* f :
         {"prompt_ids", "prompt_pieces", "drafted_tokens", "accepted_tokens", "attention_stats"})
        run.erase(f);
    for (const char* f : {"bonus", "draft_ns", "verify_ns"}) run["spec_steps"][0].erase(f);
    run["attention_snapshots"][0].erase("key_begin");
    const json v1 = j;
    Store store(test::temp_db("json_v1_import"));
    const ConversationRecord back =
        store.load_conversation(store.insert_conversation(conversation_from_json(v1)));
    const RunRecord& r = back.runs.at(0);
    EXPECT_TRUE(r.prompt_ids.empty());
    EXPECT_TRUE(r.prompt_pieces.empty());
    EXPECT_EQ(r.drafted_tokens, 0);
    EXPECT_TRUE(r.attention_stats.empty());
    EXPECT_EQ(r.spec_steps.at(0).bonus, -1);
    EXPECT_EQ(r.spec_steps.at(0).t_ns, 1980);
    EXPECT_EQ(r.attention_snapshots.at(0)->key_begin, 0);
    EXPECT_EQ(r.tokens.size(), 3u);

    const auto refused = [](const json& doc, const std::string& what) {
        try {
            conversation_from_json(doc);
            ADD_FAILURE() << "accepted: " << what;
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
        }
    };
    json v2 = v1;
    v2["version"] = 2;
    refused(v2, "runs[0] has no field 'drafted_tokens'");
    json bad = conversation_to_json(recorded_v3("json_v3_bad"));
    bad["runs"][0]["attention_stats"][0]["heads"].erase(0);
    refused(bad, "runs[0].attention_stats: heads do not match n_layer x n_head");
    bad = conversation_to_json(recorded_v3("json_v3_bad2"));
    bad["runs"][0]["prompt_pieces"][2] = json({{"hex", "e"}});
    refused(bad, "runs[0].prompt_pieces");
}

TEST(ChromeTrace, SpeculativeStepsHaveDraftAndVerifySlices) {
    const json trace = run_to_chrome_trace(recorded_v3("trace_v3").runs.at(0));
    std::map<std::string, std::pair<double, double>> spec;  // name -> (ts, dur)
    for (const auto& e : trace["traceEvents"])
        if (e["ph"] == "X" && e.value("cat", "") == "spec") {
            EXPECT_EQ(e["tid"], 4);
            spec[e["name"]] = {e["ts"], e["dur"]};
        }
    ASSERT_EQ(spec.size(), 2u);
    EXPECT_DOUBLE_EQ(spec["verify"].first, 1.38);  // t_ns 1980 - verify 600, in microseconds
    EXPECT_DOUBLE_EQ(spec["verify"].second, 0.6);
    EXPECT_DOUBLE_EQ(spec["draft"].first, 1.23);
    EXPECT_DOUBLE_EQ(spec["draft"].second, 0.15);
}

ConversationRecord recorded_evictions(const std::string& name) {
    const auto path = test::temp_db(name);
    {
        StoreWriter w(path);
        for (const auto& e : test::kv_eviction_run(1, 1)) w.record(e);
    }
    Store store(path);
    return store.load_conversation(store.list_conversations().at(0).id);
}

// The KV policy's evictions travel in the JSON export (format 3) and come back equal; a version 2
// document has none and still imports; in a version 3 document the field is required.
TEST(JsonExport, KvEvictionsRoundTrip) {
    const ConversationRecord c = recorded_evictions("json_kv");
    const json doc = conversation_to_json(c);
    EXPECT_GE(doc["version"], 3);  // format 3 added them; later formats keep them
    const json& ev = doc["runs"][0]["kv_evictions"];
    ASSERT_EQ(ev.size(), 2u);
    EXPECT_EQ(ev[0]["policy"], "streaming");
    EXPECT_EQ(ev[0]["budget"], 6);
    EXPECT_EQ(ev[0]["evicted"], json({2, 3, 4}));
    EXPECT_EQ(ev[1]["kept"], json({0, 1, 7, 8}));
    EXPECT_EQ(ev[1]["reasons"], json({0, 0, 1, 2}));
    EXPECT_EQ(ev[1]["step"], 3);
    const std::string first = doc.dump(1);
    Store store(test::temp_db("json_kv_import"));
    const ConversationRecord back =
        store.load_conversation(store.insert_conversation(conversation_from_json(doc)));
    EXPECT_EQ(conversation_to_json(back).dump(1), first);
    ASSERT_EQ(back.runs.at(0).kv_evictions.size(), 2u);
    EXPECT_EQ(back.runs[0].kv_evictions[0].kept, (std::vector<int64_t>{0, 1, 5, 6, 7}));
    EXPECT_DOUBLE_EQ(back.runs[0].kv_evictions[1].ms, 0.25);

    json v2 = doc;
    v2["version"] = 2;
    v2["runs"][0].erase("kv_evictions");
    EXPECT_TRUE(conversation_from_json(v2).runs.at(0).kv_evictions.empty());
    json v3 = doc;
    v3["runs"][0].erase("kv_evictions");
    EXPECT_THROW(conversation_from_json(v3), Error);
    json bad = doc;
    bad["runs"][0]["kv_evictions"][0]["reasons"].erase(0);
    EXPECT_THROW(conversation_from_json(bad), Error);
}

TEST(ChromeTrace, KvEvictionsAreInstantsWithTheirCounts) {
    const json trace = run_to_chrome_trace(recorded_evictions("trace_kv").runs.at(0));
    std::vector<json> instants;
    bool named = false;
    for (const auto& e : trace["traceEvents"]) {
        if (e["ph"] == "M" && e["name"] == "thread_name" && e["args"]["name"] == "KV policy")
            named = e["tid"] == 5;
        if (e["ph"] == "i" && e["name"] == "KV eviction") instants.push_back(e);
    }
    EXPECT_TRUE(named);
    ASSERT_EQ(instants.size(), 2u);
    EXPECT_EQ(instants[0]["tid"], 5);
    EXPECT_DOUBLE_EQ(instants[0]["ts"].get<double>(), 1.925);
    const json& a = instants[1]["args"];
    EXPECT_EQ(a["evicted"], 2);
    EXPECT_EQ(a["kept"], 4);
    EXPECT_EQ(a["sinks"], 2);
    EXPECT_EQ(a["recent"], 1);
    EXPECT_EQ(a["heavy"], 1);
    EXPECT_EQ(a["policy"], "streaming");
    EXPECT_EQ(a["step"], 3);
}

TEST(MarkdownExport, SpeculativeTotalsAreInTheStats) {
    const std::string md = conversation_markdown(recorded_v3("md_v3"));
    EXPECT_NE(md.find("speculative: 5/7 drafts accepted (71%)"), std::string::npos) << md;
    EXPECT_EQ(conversation_markdown(recorded("md_plain")).find("speculative"), std::string::npos);
}

TEST(ChromeTrace, EventsHaveTheirFieldsAndSlicesNest) {
    const ConversationRecord c = recorded("trace");
    const json trace = run_to_chrome_trace(c.runs.at(0));
    const fluoro::test::ChromeTraceSummary sum = fluoro::test::check_chrome_trace(trace);
    // 4 steps, each with matmul and sampling slices; the request.
    EXPECT_EQ(sum.by_phase.at("X"), 4 + 4 * 2 + 1);
    EXPECT_EQ(sum.by_phase.at("i"), 4 + 1);  // tokens, one cache event
    EXPECT_EQ(sum.flows, 4);                 // the request to each step
    EXPECT_TRUE(sum.counters.count("tok/s"));
    EXPECT_TRUE(sum.counters.count("KV bytes"));
    EXPECT_TRUE(sum.counters.count("cache hit rate"));
    EXPECT_FALSE(sum.counters.count("achieved GB/s"));  // no trace, no bytes per step
    EXPECT_EQ(sum.thread_names.at(1), "steps");
    EXPECT_EQ(sum.thread_names.at(6), "request");
    // The synthetic steps start at multiples of 1000 ns: microseconds, not nanoseconds.
    EXPECT_DOUBLE_EQ(sum.slices.at(1).at(0).ts, 0.0);
}

// A run recorded at level Trace: each step holds its layers in order, each layer its ops in the
// order they ran with their args, under each matmul the engine thread's tasks and wait, the host
// time after the last op; worker 1 has a track of its own; the achieved-bandwidth counter is the
// step's bytes over its wall time.
TEST(ChromeTrace, TracedStepsShowLayersOpsAndWorkersInTheirOrder) {
    const auto path = test::temp_db("trace_timeline");
    {
        StoreWriter w(path);
        for (Event& e : test::synthetic_run(1, 1, RunKind::Send, 0, "hi", {"a", "b", "c"})) {
            if (auto* s = std::get_if<StepEvent>(&e))
                s->trace = test::synthetic_trace(s->start_ns, int32_t(s->tokens));
            w.record(e);
        }
    }
    Store store(path);
    const ConversationRecord c = store.load_conversation(store.list_conversations().at(0).id);
    const json trace = run_to_chrome_trace(c.runs.at(0));
    const fluoro::test::ChromeTraceSummary sum = fluoro::test::check_chrome_trace(trace);
    EXPECT_EQ(sum.thread_names.at(1), "engine thread (steps)");
    EXPECT_EQ(sum.thread_names.at(11), "worker 1");
    EXPECT_TRUE(sum.counters.count("achieved GB/s"));
    EXPECT_EQ(sum.flows, 3);

    // Step 1 (a decode step, 1000..1900 ns) on the engine thread, in file order.
    std::vector<std::string> names;
    const json* qkv = nullptr;
    for (const fluoro::test::ChromeSlice& s : sum.slices.at(1)) {
        if (s.ts < 1.0 || s.ts >= 1.9) continue;
        names.push_back(s.name);
        if (s.name == "attn_q+attn_k+attn_v" && !qkv) qkv = s.event;
    }
    std::vector<std::string> want = {"decode", "get_rows(token_embd)"};
    for (int layer = 0; layer < 2; ++layer) {
        want.push_back("layer " + std::to_string(layer));
        want.push_back("rms_norm(attn_norm)");
        for (const char* op : {"attn_q+attn_k+attn_v", "attention", "ffn_down"})
            want.insert(want.end(), {op, "tasks", "wait"});  // the engine thread under each op
    }
    want.insert(want.end(), {"lm_head(output)", "tasks", "wait", "host"});
    EXPECT_EQ(names, want);
    ASSERT_NE(qkv, nullptr);
    const json& args = (*qkv)["args"];
    EXPECT_EQ(args["layer"], 0);
    EXPECT_EQ(args["rows"], 1);
    EXPECT_EQ(args["category"], "matmul");
    EXPECT_EQ(args["bytes"], 6000.0);
    EXPECT_EQ(args["weight_type"], "q4_1");
    EXPECT_EQ(args["shape"], json::array({64, 300}));
    EXPECT_DOUBLE_EQ(args["GB/s"].get<double>(), 6000.0 / 60e-9 / 1e9);  // 60 ns
    EXPECT_DOUBLE_EQ(args["GFLOP/s"].get<double>(), 4000.0 / 60e-9 / 1e9);
    // Worker 1: one busy span per matmul and attention call (7 per step), 3 steps.
    EXPECT_EQ(sum.slices.at(11).size(), 7u * 3u);
    // The counter: a step's bytes (2 x (6000 + 1200 + 3000) + 12000) over its 900 ns.
    double gbs = -1;
    for (const json& e : trace["traceEvents"])
        if (e["ph"] == "C" && e["name"] == "achieved GB/s" && e["ts"] == 1.9)
            gbs = e["args"]["GB/s"];
    EXPECT_DOUBLE_EQ(gbs, 32400.0 / 900e-9 / 1e9);
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
