// The engine's persisted prefix cache (ModelSettings::prefix_cache_file) across engine lifetimes,
// on a small seeded model: saved at unload and at shutdown, restored by the next engine so a
// request on the same system prompt is served from it; a corrupt file or one made with another KV
// type is reported in ModelLoaded and ignored, and the engine works on with an empty cache.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>

#include "core/error.h"
#include "engine/runtime/engine_test_events.h"
#include "gguf/gguf_file.h"
#include "gguf/test_model.h"
#include "runtime/engine.h"
#include "test_temp.h"
#include "tokenizer/tokenizer.h"

namespace fluoro {
namespace {

using test::all_of;
using test::next_run;

const std::string kSystem =
    "You are a careful assistant for a hardware store. Tools: find(sku), stock(sku), "
    "price(sku). Always answer with the tool you would call first.";

std::filesystem::path small_model() {
    const auto path = test::unique_temp_path("engine_pc_file.gguf");
    if (!std::filesystem::exists(path)) {
        gguf::TestModelSpec spec;
        spec.n_ctx = 1024;
        spec.n_embd = 128;  // head rows of 32: a q8_0 KV cache works too
        gguf::write_test_model(path, spec);
    }
    return path;
}

LoadModel load(const std::filesystem::path& cache_file, KvType kv = KvType::F16) {
    LoadModel c{small_model(), {}};
    c.settings.threads = 1;
    c.settings.ctx = 1024;
    c.settings.kv_type = kv;
    c.settings.prefix_cache_slots = 4;
    c.settings.prefix_cache_file = cache_file;
    return c;
}

ModelLoaded loaded(Engine& e) {
    const auto ev = all_of<ModelLoaded>(e.events().drain());
    EXPECT_EQ(ev.size(), 1u);
    return ev.empty() ? ModelLoaded{} : ev.front();
}

// The small model with token `word`'s embedding row set to NaN: a prompt holding it makes every
// logit NaN (its K/V rows are NaN, and attention reads them), any other prompt is untouched.
// `used_in` must tokenize with that token in it.
std::filesystem::path nan_token_model(const std::string& word, const std::string& used_in) {
    const auto path = test::unique_temp_path("engine_pc_nan.gguf");
    gguf::TestModelSpec spec;
    spec.n_ctx = 1024;
    spec.n_embd = 128;
    spec.tied_output = false;  // a tied output matrix would make that token's logit NaN always
    gguf::write_test_model(path, spec);
    int64_t token = -1;
    uint64_t row_at = 0, row_bytes = 0;
    {
        const gguf::GgufFile f = gguf::GgufFile::open(path);
        const tok::Tokenizer tk = tok::Tokenizer::from_gguf(f);
        const auto ids = tk.encode(word, false, false);
        EXPECT_EQ(ids.size(), 1u) << word;  // one token, so the rest of the prompt is clean
        token = ids.at(0);
        const auto in = tk.encode(used_in, false, false);
        EXPECT_NE(std::find(in.begin(), in.end(), token), in.end()) << used_in;
        const gguf::TensorInfo* t = f.find_tensor("token_embd.weight");
        EXPECT_TRUE(t && t->type == GgmlType::F32);
        row_bytes = t->ne[0] * sizeof(float);
        row_at = f.data_offset() + t->offset + uint64_t(token) * row_bytes;
    }
    std::fstream out(path, std::ios::in | std::ios::out | std::ios::binary);
    const std::vector<float> nan(row_bytes / sizeof(float),
                                 std::numeric_limits<float>::quiet_NaN());
    out.seekp(std::streamoff(row_at));
    out.write(reinterpret_cast<const char*>(nan.data()), std::streamsize(row_bytes));
    EXPECT_TRUE(out.good());
    return path;
}

PrefixCacheEvent ask(Engine& e, const std::string& system, const std::string& user) {
    Complete c{{{"system", system}, {"user", user}}};
    SamplingParams p;
    p.temperature = 0;
    c.sampling = p;
    c.max_tokens = 2;
    e.submit(c);
    const auto events = next_run(e);
    const auto pc = all_of<PrefixCacheEvent>(events);
    EXPECT_EQ(pc.size(), 1u);
    EXPECT_EQ(std::get<RunFinished>(events.back()).stop, "max_tokens")
        << std::get<RunFinished>(events.back()).error;
    return pc.empty() ? PrefixCacheEvent{} : pc.front();
}

TEST(EnginePrefixCacheFile, SurvivesARestartAndServesTheSystemPrompt) {
    const auto file = test::unique_temp_path("engine_restart.fpc");
    std::filesystem::remove(file);
    int64_t system_tokens = 0;
    {
        Engine e;
        e.submit_blocking(load(file));
        EXPECT_EQ(loaded(e).prefix_cache_note, "");  // no file yet
        EXPECT_EQ(ask(e, kSystem, "Do you have 6 mm screws?").source, "none");
        // The second request shares the system prompt with the first.
        const PrefixCacheEvent second = ask(e, kSystem, "What does a hammer cost?");
        system_tokens = second.cached_tokens;
        ASSERT_GT(system_tokens, 20);
        e.submit_blocking(UnloadModel{});  // saves
    }
    ASSERT_TRUE(std::filesystem::exists(file));
    {
        Engine e;
        e.submit_blocking(load(file));
        const ModelLoaded ml = loaded(e);
        EXPECT_NE(ml.prefix_cache_note.find("restored"), std::string::npos) << ml.prefix_cache_note;
        EXPECT_GE(ml.prefix_cache_restored_entries, 1);
        const PrefixCacheEvent first = ask(e, kSystem, "Is the paint in stock?");
        EXPECT_EQ(first.source, "prefix_cache");
        EXPECT_GE(first.cached_tokens, system_tokens);
        // No unload: the engine's shutdown saves this conversation too.
    }
    {
        Engine e;
        e.submit_blocking(load(file));
        EXPECT_GE(loaded(e).prefix_cache_restored_entries, 2);
    }
}

// Each request's PrefixCacheEvent carries the cache's radix tree as the request left it: the
// entries kept from earlier conversations, and the path the prompt followed marked for exactly
// the tokens it reused.
TEST(EnginePrefixCacheFile, TheEventCarriesTheTreeWithTheRequestsPath) {
    const auto file = test::unique_temp_path("pc_tree.bin");
    std::filesystem::remove(file);
    Engine e({TelemetryLevel::Summary});
    e.submit_blocking(load(file));
    loaded(e);
    const PrefixCacheEvent first = ask(e, kSystem, "Is the paint in stock?");
    EXPECT_TRUE(first.tree.size() <= 1u);                // nothing kept yet: at most the root
    ask(e, "Another system prompt entirely.", "Hello");  // keeps the first conversation
    const PrefixCacheEvent third = ask(e, kSystem, "What does a hammer cost?");
    ASSERT_GE(third.tree.size(), 3u);  // root and at least the two conversations kept
    EXPECT_EQ(third.tree[0].parent, -1);
    EXPECT_EQ(third.tree[0].entries, third.cache_entries);
    int64_t matched = 0, entries = 0, tokens = 0;
    for (const PrefixTreeNode& n : third.tree) {
        matched += n.matched;
        if (n.slot >= 0) ++entries, tokens += n.depth;
        EXPECT_EQ(n.bytes > 0, n.edge_tokens > 0);  // KV bytes of its edge
        if (n.parent >= 0) {
            EXPECT_LT(n.parent, &n - third.tree.data());  // pre-order: the parent comes first
        }
    }
    EXPECT_EQ(entries, third.cache_entries);
    EXPECT_EQ(tokens, third.cache_tokens);
    EXPECT_GT(third.cached_tokens, 0);
    EXPECT_EQ(matched, third.cached_tokens);  // the path is the reused prefix, token for token
}

TEST(EnginePrefixCacheFile, ACorruptOrForeignFileIsReportedAndIgnored) {
    const auto file = test::unique_temp_path("engine_corrupt.fpc");
    std::filesystem::remove(file);
    {
        Engine e;
        e.submit_blocking(load(file));
        ask(e, kSystem, "Do you have 6 mm screws?");
    }  // saved at shutdown
    ASSERT_TRUE(std::filesystem::exists(file));
    {  // another KV type: foreign
        Engine e;
        e.submit_blocking(load(file, KvType::Q8_0));
        const ModelLoaded ml = loaded(e);
        EXPECT_NE(ml.prefix_cache_note.find("kv_type is f16, here q8_0"), std::string::npos)
            << ml.prefix_cache_note;
        EXPECT_EQ(ml.prefix_cache_restored_entries, 0);
        EXPECT_EQ(ask(e, kSystem, "What does a hammer cost?").source, "none");
        e.submit_blocking(UnloadModel{});  // saves a q8_0 cache over it
    }
    {  // flip one byte in the middle of the (q8_0) file
        std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
        f.seekg(0, std::ios::end);
        const auto size = f.tellg();
        f.seekp(size / 2);
        char c = 0;
        f.seekg(size / 2);
        f.get(c);
        f.seekp(size / 2);
        f.put(char(c ^ 0x5a));
    }
    {
        Engine e;
        e.submit_blocking(load(file, KvType::Q8_0));
        const ModelLoaded ml = loaded(e);
        EXPECT_NE(ml.prefix_cache_note.find("checksum mismatch"), std::string::npos)
            << ml.prefix_cache_note;
        EXPECT_NE(ml.prefix_cache_note.find(file.string()), std::string::npos);
        EXPECT_EQ(ml.prefix_cache_restored_entries, 0);
        // The engine works on, and the next save replaces the bad file with a good one.
        EXPECT_EQ(ask(e, kSystem, "Is the paint in stock?").source, "none");
    }
    {
        Engine e;
        e.submit_blocking(load(file, KvType::Q8_0));
        EXPECT_GE(loaded(e).prefix_cache_restored_entries, 1);
    }
}

TEST(EnginePrefixCacheFile, AFileWithoutCacheSlotsIsAnError) {
    Engine e;
    LoadModel c = load(test::unique_temp_path("no_slots.fpc"));
    c.settings.prefix_cache_slots = 0;
    EXPECT_THROW(e.submit_blocking(c), Error);
}

// Issue 38: a run that meets a NaN logit keeps nothing it read or wrote. Which rows caused it
// cannot be told (a restored entry, the prompt's own rows, a kernel), so the conversation's KV is
// dropped and every prefix-cache entry evicted, and the file is rewritten at once: before this, a
// cache holding poisoned rows failed every request sharing its prefix and was saved again.
TEST(EnginePrefixCacheFile, ANonFiniteLogitEmptiesTheCacheAndTheFile) {
    const auto file = test::unique_temp_path("engine_nan.fpc");
    std::filesystem::remove(file);
    LoadModel c = load(file);
    const std::string bad_text = "What does a hammer cost!";  // '!' is in no other prompt here
    c.path = nan_token_model("!", bad_text);
    {
        Engine e;
        e.submit_blocking(c);
        loaded(e);
        EXPECT_EQ(ask(e, kSystem, "Do you have 6 mm screws?").source, "none");
        EXPECT_GT(ask(e, kSystem, "And nails?").cached_tokens, 20);  // served from the cache

        Complete bad{{{"system", kSystem}, {"user", bad_text}}};
        bad.max_tokens = 2;
        e.submit(bad);
        const auto events = next_run(e);
        const RunFinished& f = std::get<RunFinished>(events.back());
        ASSERT_EQ(f.stop, "error");
        EXPECT_NE(f.error.find("non-finite"), std::string::npos) << f.error;
        EXPECT_NE(f.error.find("prefix cache emptied"), std::string::npos) << f.error;

        // Nothing cached survives: the same system prompt is computed again, and works.
        const PrefixCacheEvent after = ask(e, kSystem, "Do you have 6 mm screws?");
        EXPECT_EQ(after.cached_tokens, 0);
        EXPECT_EQ(after.source, "none");
    }
    // The file written at the failure and again at shutdown (the last, clean conversation)
    // restores: nothing in it is refused.
    Engine e2;
    e2.submit_blocking(c);
    const std::string note = loaded(e2).prefix_cache_note;
    EXPECT_NE(note.find("restored"), std::string::npos) << note;
    EXPECT_EQ(note.find("ignored"), std::string::npos) << note;
}

}  // namespace
}  // namespace fluoro
