// Schema v3 fields through the store: the prompt's ids and pieces, the speculative totals, a spec
// step's bonus token and timings, an attention snapshot's key_begin and the attention stats are
// recorded by the writer and read back equal; a malformed blob or row is refused with the file's
// name rather than trusted.
#include <gtest/gtest.h>

#include "store/blob_codec.h"
#include "store/store_writer.h"
#include "store_test_util.h"

namespace fluoro::app {
namespace {

using test::temp_db;
using test::v3_run;

int64_t record_v3(const std::filesystem::path& path) {
    return test::record_events(path, v3_run(1, 1));
}

TEST(StoreV3, EveryNewFieldIsStoredAndReadBackEqual) {
    const auto path = temp_db("v3_fields");
    const int64_t id = record_v3(path);
    Store store(path);
    const RunRecord r = store.load_run(id);
    EXPECT_EQ(r.prompt_ids, (std::vector<int32_t>{1, 529, 9999, 13}));
    EXPECT_EQ(r.prompt_pieces,
              (std::vector<std::string>{"<s>", "<|user|>", std::string("\xE4"), "\n"}));
    EXPECT_EQ(r.drafted_tokens, 7);
    EXPECT_EQ(r.accepted_tokens, 5);

    ASSERT_EQ(r.spec_steps.size(), 1u);
    const SpecStep& sp = r.spec_steps[0];
    EXPECT_EQ(sp.step, 1);
    EXPECT_EQ(sp.drafter, "prompt-lookup");
    ASSERT_EQ(sp.drafted.size(), 2u);
    EXPECT_EQ(sp.drafted[1].id, 22);
    EXPECT_FLOAT_EQ(sp.drafted[1].p, 0.125f);
    EXPECT_FALSE(sp.drafted[1].accepted);
    EXPECT_EQ(sp.accepted, 1);
    EXPECT_EQ(sp.resampled, 23);
    EXPECT_EQ(sp.bonus, 24);
    EXPECT_EQ(sp.draft_ns, 150);
    EXPECT_EQ(sp.verify_ns, 600);
    EXPECT_EQ(sp.t_ns, 1980);  // not in bonus: the fields are read by name

    ASSERT_EQ(r.attention_snapshots.size(), 1u);
    const AttentionSnapshot& at = *r.attention_snapshots[0];
    EXPECT_EQ(at.layer, 3);
    EXPECT_EQ(at.head, 1);
    EXPECT_EQ(at.first_row, 11);
    EXPECT_EQ(at.n_cols, 3);
    EXPECT_EQ(at.key_begin, 8);
    EXPECT_EQ(at.weights, (std::vector<float>{0.25f, 0.5f, 0.25f}));
    EXPECT_EQ(at.t_ns, 2960);

    ASSERT_EQ(r.attention_stats.size(), 2u);
    const AttentionStats& st = r.attention_stats[0];  // in recorded order
    EXPECT_EQ(st.run, uint64_t(id));
    EXPECT_EQ(st.step, 2);
    EXPECT_EQ(st.t_ns, 2970);
    EXPECT_EQ(st.n_layer, 2);
    EXPECT_EQ(st.n_head, 3);
    EXPECT_EQ(st.top_k, 4);
    EXPECT_FLOAT_EQ(st.threshold, 0.01f);
    EXPECT_EQ(st.n_keys, 11);
    ASSERT_EQ(st.heads.size(), 6u);
    EXPECT_FLOAT_EQ(st.heads[5].entropy, 4.5f);
    EXPECT_FLOAT_EQ(st.heads[5].top_k_mass, 0.75f);
    EXPECT_FLOAT_EQ(st.heads[5].below_threshold, 0.625f);
    EXPECT_FLOAT_EQ(st.heads[5].sink_mass, 0.0625f);
    EXPECT_EQ(r.attention_stats[1].step, 1);

    // Deleting the conversation takes the stats with it.
    store.delete_conversation(store.conversation_of_run(id));
    EXPECT_EQ(store.db().query_int("SELECT count(*) FROM attention_stats"), 0);
}

TEST(StoreV3, BlobsRoundTripAndMalformedOnesThrow) {
    const std::vector<std::string> pieces = {"", "a", std::string("\0b", 2), "\xF0\x9F"};
    EXPECT_EQ(decode_pieces(encode_pieces(pieces)), pieces);
    EXPECT_TRUE(decode_pieces({}).empty());
    auto bad = encode_pieces(pieces);
    bad.pop_back();  // the last piece claims one byte more than is left
    EXPECT_THROW(decode_pieces(bad), StoreError);
    EXPECT_THROW(decode_pieces(std::vector<uint8_t>{1, 0}), StoreError);  // truncated length

    const std::vector<int32_t> ids = {0, -1, 151643};
    EXPECT_EQ(decode_ids(encode_ids(ids)), ids);
    EXPECT_THROW(decode_ids(std::vector<uint8_t>{1, 2, 3}), StoreError);

    const std::vector<AttentionHeadStats> heads = {{1, 2, 3, 4}, {5, 6, 7, 8}};
    const auto back = decode_head_stats(encode_head_stats(heads));
    ASSERT_EQ(back.size(), 2u);
    EXPECT_EQ(back[1].below_threshold, 7);
    EXPECT_THROW(decode_head_stats(std::vector<uint8_t>(17)), StoreError);
}

void expect_refused_naming(Store& store, int64_t run, const std::string& what) {
    try {
        store.load_run(run);
        FAIL() << "a corrupt row was read: " << what;
    } catch (const StoreError& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find(store.path().string()), std::string::npos) << msg;
        EXPECT_NE(msg.find(what), std::string::npos) << msg;
    }
}

TEST(StoreV3, CorruptRowsAreRefusedNamingTheFile) {
    const auto path = temp_db("v3_corrupt");
    const int64_t id = record_v3(path);
    {
        Store store(path);
        store.db().exec("UPDATE runs SET prompt_pieces = x'05000000414243'");
        expect_refused_naming(store, id, "prompt_pieces");
    }
    {
        Store store(path);
        store.db().exec("UPDATE runs SET prompt_pieces = x''");
        EXPECT_TRUE(store.load_run(id).prompt_pieces.empty());
        store.db().exec("UPDATE attention_stats SET n_head = 4");
        expect_refused_naming(store, id, "attention_stats");
    }
    {
        Store store(path);
        store.db().exec("UPDATE attention_stats SET n_head = 3");
        store.db().exec("UPDATE snapshots SET key_begin = -1 WHERE kind = 'attention'");
        expect_refused_naming(store, id, "key_begin");
    }
}

}  // namespace
}  // namespace fluoro::app
