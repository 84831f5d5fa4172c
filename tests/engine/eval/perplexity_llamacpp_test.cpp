// Perplexity of SmolLM2 on the first 8192 tokens of King James Genesis (public domain, Debian's
// bible-kjv-text; tests/reference/data), context 512, must be within 1% of llama.cpp's figure for
// the same text and method (fixture by tests/reference/make_ppl_fixture.py).
#include "eval/perplexity.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/model/model_fixture.h"

namespace fluoro {
namespace {

TEST(PerplexityLlamaCpp, SmolLM2KjvWithinOnePercent) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    std::ifstream fin(test::fixtures_dir() / "ppl_llamacpp.json");
    const nlohmann::json fx = nlohmann::json::parse(fin);
    std::ifstream tin(test::fixtures_dir().parent_path() / "data" / "kjv_genesis.txt");
    std::stringstream text;
    text << tin.rdbuf();
    test::LoadedTestModel* lm = test::shared_model(path, 128, 128);
    ASSERT_NE(lm, nullptr);
    Model& model = *lm->model;
    std::vector<int32_t> ids = model.tokenizer().encode(text.str(), false, false);
    const std::vector<int32_t> expected = fx["ids"];
    ASSERT_GE(ids.size(), expected.size());
    ids.resize(expected.size());
    ASSERT_EQ(ids, expected) << "our tokenizer must produce llama.cpp's input exactly";
    auto kv = model.create_kv(512, 1, KvType::F16);
    PerplexityOptions opt;
    opt.n_ctx = fx["n_ctx"];
    const PerplexityResult r = perplexity(model, *kv, ids, opt);
    const double theirs = fx["ppl"];
    std::printf("[ ppl ] ours %.4f, llama.cpp %.4f (%+.3f%%), %lld scored tokens, %.1f s\n", r.ppl,
                theirs, 100.0 * (r.ppl - theirs) / theirs, static_cast<long long>(r.scored_tokens),
                r.ms / 1000.0);
    EXPECT_EQ(r.scored_tokens, int64_t(fx["scored_tokens"]));
    EXPECT_LE(std::abs(r.ppl - theirs) / theirs, 0.01);
}

}  // namespace
}  // namespace fluoro
