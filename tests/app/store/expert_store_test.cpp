// Schema v7: a mixture-of-experts step's routing (StepEvent::experts) is stored with the step,
// replayed, exported and imported as it was made live, so a reopened run shows its expert load
// and each token's experts. A malformed routing, in a blob or a document, is refused by name.
#include <gtest/gtest.h>

#include <cstring>

#include "export/json_export.h"
#include "replay/replay.h"
#include "store/blob_codec.h"
#include "store/schema.h"
#include "store/sqlite_db.h"
#include "store/store.h"
#include "store/store_writer.h"
#include "store_test_util.h"

namespace fluoro::app {
namespace {

using test::synthetic_run;
using test::temp_db;

// Routing for a step of `tokens` tokens: 3 layers, 8 experts, top-2; token t of step s in layer
// l goes to experts (s + t) % 8 and (s + t + l + 1) % 8, weights 0.75 / 0.25; layer 2 of step
// 0's first token skipped (-1), as an early-exit draft pass leaves it.
std::shared_ptr<const ExpertRouting> routing(int64_t step, int64_t tokens) {
    auto r = std::make_shared<ExpertRouting>();
    r->n_layer = 3;
    r->n_expert = 8;
    r->n_used = 2;
    r->n_tokens = tokens;
    for (int32_t l = 0; l < 3; ++l)
        for (int64_t t = 0; t < tokens; ++t) {
            const bool skipped = step == 0 && t == 0 && l == 2;
            r->experts.push_back(skipped ? -1 : int32_t((step + t) % 8));
            r->experts.push_back(skipped ? -1 : int32_t((step + t + l + 1) % 8));
            r->weights.push_back(skipped ? 0.0f : 0.75f);
            r->weights.push_back(skipped ? 0.0f : 0.25f);
        }
    return r;
}

std::vector<Event> moe_run() {
    std::vector<Event> ev = synthetic_run(1, 1, RunKind::Send, 0, "hello", {"a", "b", "c"});
    for (Event& e : ev)
        if (auto* s = std::get_if<StepEvent>(&e)) s->experts = routing(s->index, s->tokens);
    return ev;
}

void expect_routing(const std::vector<StepEvent>& steps) {
    ASSERT_FALSE(steps.empty());
    for (const StepEvent& s : steps) {
        ASSERT_NE(s.experts, nullptr) << "step " << s.index;
        const auto want = routing(s.index, s.tokens);
        EXPECT_EQ(s.experts->n_layer, 3);
        EXPECT_EQ(s.experts->n_expert, 8);
        EXPECT_EQ(s.experts->n_used, 2);
        EXPECT_EQ(s.experts->n_tokens, s.tokens);
        EXPECT_EQ(s.experts->experts, want->experts) << "step " << s.index;
        EXPECT_EQ(s.experts->weights, want->weights) << "step " << s.index;
    }
}

int64_t write(const std::filesystem::path& path, const std::vector<Event>& events) {
    return test::record_events(path, events);
}

TEST(ExpertStore, RoutingIsStoredReplayedExportedAndImported) {
    const auto path = temp_db("experts");
    const int64_t id = write(path, moe_run());
    Store store(path);
    const RunRecord r = store.load_run(id);
    expect_routing(r.steps);

    const ConversationRecord c = store.load_conversation(store.conversation_of_run(id));
    std::vector<StepEvent> replayed;
    for (const Event& e : run_events(c, c.runs.at(0)))
        if (const auto* s = std::get_if<StepEvent>(&e)) replayed.push_back(*s);
    expect_routing(replayed);

    const ConversationRecord back = conversation_from_json(conversation_to_json(c));
    ASSERT_EQ(back.runs.size(), 1u);
    expect_routing(back.runs[0].steps);
}

TEST(ExpertStore, ADenseRunStoresNoRouting) {
    const auto path = temp_db("experts_dense");
    const int64_t id = write(path, synthetic_run(1, 1, RunKind::Send, 0, "hi", {"a", "b"}));
    Store store(path);
    const RunRecord r = store.load_run(id);
    ASSERT_FALSE(r.steps.empty());
    for (const StepEvent& s : r.steps) EXPECT_EQ(s.experts, nullptr);
    EXPECT_EQ(store.db().query_int("SELECT count(*) FROM steps WHERE length(experts) > 0"), 0);
    const nlohmann::json doc =
        conversation_to_json(store.load_conversation(store.conversation_of_run(id)));
    for (const auto& s : doc["runs"][0]["steps"]) EXPECT_FALSE(s.contains("experts"));
}

TEST(ExpertStore, MalformedBlobsAreRefused) {
    EXPECT_EQ(decode_experts({}), nullptr);
    const auto good = routing(1, 2);
    std::vector<uint8_t> blob = encode_experts(good.get());
    EXPECT_EQ(blob.size(), 20u + 3 * 2 * 2 * 6);
    EXPECT_EQ(decode_experts(blob)->experts, good->experts);

    std::vector<uint8_t> cut = blob;
    cut.pop_back();
    EXPECT_THROW(decode_experts(cut), StoreError);  // not whole records
    // A header claiming 2^40 tokens over the same bytes: refused before anything is allocated.
    std::vector<uint8_t> forged = blob;
    const int64_t huge = int64_t(1) << 40;
    std::memcpy(forged.data() + 12, &huge, sizeof huge);
    EXPECT_THROW(decode_experts(forged), StoreError);
    // Expert 9 of 8.
    std::vector<uint8_t> beyond = blob;
    const int16_t nine = 9;
    std::memcpy(beyond.data() + 20, &nine, sizeof nine);
    try {
        decode_experts(beyond);
        FAIL() << "expert 9 of 8 was read";
    } catch (const StoreError& e) {
        EXPECT_NE(std::string(e.what()).find("expert 9 of 8"), std::string::npos) << e.what();
    }

    // In a file: the step's routing must match the step, and the error names file and step.
    const auto path = temp_db("experts_bad");
    const int64_t id = write(path, moe_run());
    Store store(path);
    store.db().exec(
        "UPDATE steps SET experts = (SELECT experts FROM steps WHERE idx = 0) "
        "WHERE idx = 1");  // the prefill's 9-token routing on a 1-token step
    try {
        store.load_run(id);
        FAIL() << "a 9-token routing on a 1-token step was read";
    } catch (const StoreError& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find(path.string()), std::string::npos) << msg;
        EXPECT_NE(msg.find("experts blob of step 1"), std::string::npos) << msg;
    }
}

TEST(ExpertStore, AMalformedDocumentIsRefused) {
    const auto path = temp_db("experts_doc");
    const int64_t id = write(path, moe_run());
    Store store(path);
    nlohmann::json doc =
        conversation_to_json(store.load_conversation(store.conversation_of_run(id)));
    nlohmann::json& x = doc["runs"][0]["steps"][1]["experts"];
    ASSERT_TRUE(x.is_object());
    x["experts"][0] = 8;  // of 8 experts
    try {
        conversation_from_json(doc);
        FAIL() << "expert 8 of 8 was imported";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("expert 8 of 8"), std::string::npos) << e.what();
    }
    x["experts"][0] = 1;
    x["weights"].erase(0);  // one weight short
    EXPECT_THROW(conversation_from_json(doc), Error);
}

// A version 6 file (the steps table without the experts column) holding a run: migrated to the
// current version, its steps read with no routing, and the file then takes routed steps.
TEST(ExpertStore, AVersion6FileIsMigratedWithItsStepsKept) {
    const auto path = temp_db("v6_to_v7");
    const int64_t dense = write(path, synthetic_run(1, 1, RunKind::Send, 0, "hi", {"a", "b"}));
    {
        Database raw(path, SQLITE_OPEN_READWRITE);
        raw.exec(std::string(test::kBackToV10) +
                 "ALTER TABLE steps DROP COLUMN trace; ALTER TABLE steps DROP COLUMN experts; "
                 "DROP TABLE measurements; "
                 "ALTER TABLE cache_events DROP COLUMN tree; "
                 "PRAGMA user_version = 6");
    }
    {
        Store store(path);
        EXPECT_EQ(store.db().query_int("PRAGMA user_version"), kSchemaVersion);
        const RunRecord r = store.load_run(dense);
        ASSERT_FALSE(r.steps.empty());
        for (const StepEvent& s : r.steps) EXPECT_EQ(s.experts, nullptr);
    }
    const int64_t moe = write(path, moe_run());
    Store store(path);
    expect_routing(store.load_run(moe).steps);
}

}  // namespace
}  // namespace fluoro::app
