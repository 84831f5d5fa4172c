// Greedy continuations (64 tokens) of 12 fixed prompts must equal llama.cpp's on the same GGUF
// (fixtures by tests/reference/make_greedy_fixtures.py, llama-cpp-python; prompts fixed before
// any run). Two correct engines can part at a near-tie: where the continuations first differ,
// the test requires that it was one — our pick among llama.cpp's top 5 and within kTieMargin of
// its pick by llama.cpp's logits, and llama.cpp's pick within kTieMargin of ours by our logits —
// and prints every such case for the closing note.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "decode/sequence.h"
#include "engine/model/model_fixture.h"

namespace fluoro {
namespace {

using nlohmann::json;

// Two float32 engines with Q8-quantized activations do not produce identical logits: measured on
// the six prompts of logits_smollm2.json, ours and llama.cpp's differ by up to 0.96 (centered RMS
// 0.13-0.19), while each is as far from an exact float64 forward pass (rounding choices
// amplified through 30 layers; for a single token already 0.15). A gap below this margin between
// two candidates is therefore a tie that either engine may resolve either way.
constexpr double kTieMargin = 1.0;

int32_t argmax(std::span<const float> l) {
    int32_t best = 0;
    for (size_t i = 1; i < l.size(); ++i)
        if (l[i] > l[size_t(best)]) best = int32_t(i);
    return best;
}

void check_model(const std::filesystem::path& path, const std::string& fixture_name) {
    std::ifstream in(test::fixtures_dir() / fixture_name);
    const json fx = json::parse(in);
    test::LoadedTestModel* lm = test::shared_model(path);
    ASSERT_NE(lm, nullptr);
    Model& model = *lm->model;
    auto kv = model.create_kv(1024, 1, KvType::F16);
    int exact = 0, ties = 0;
    for (const json& e : fx["entries"]) {
        Sequence seq(model, *kv, 0);
        const std::vector<int32_t> prompt = e["prompt_ids"], expected = e["generated"];
        auto logits = seq.prefill(prompt);
        size_t i = 0;
        for (; i < expected.size(); ++i) {
            const int32_t ours = argmax(logits);
            if (ours != expected[i]) break;
            if (i + 1 < expected.size()) logits = seq.decode(ours);
        }
        const std::string name = e["name"];
        if (i == expected.size()) {
            ++exact;
            continue;
        }
        const int32_t ours = argmax(logits), theirs = expected[i];
        const std::vector<int32_t> ref_ids = e["top_ids"][i];
        const std::vector<double> ref_logits = e["top_logits"][i];
        double ref_gap = std::numeric_limits<double>::infinity();  // llama.cpp: its pick - ours
        for (size_t k = 0; k < ref_ids.size(); ++k)
            if (ref_ids[k] == ours) ref_gap = ref_logits[0] - ref_logits[k];
        const double our_gap = double(logits[size_t(ours)]) - double(logits[size_t(theirs)]);
        std::printf(
            "[ greedy ] %s/%s: parts at token %zu: llama.cpp %d, ours %d; gap by llama.cpp's "
            "logits %.4f, by ours %.4f\n",
            fixture_name.c_str(), name.c_str(), i, theirs, ours, ref_gap, our_gap);
        ++ties;
        EXPECT_LE(ref_gap, kTieMargin)
            << name << " at token " << i << " (our pick not a near-tie for llama.cpp)";
        EXPECT_LE(our_gap, kTieMargin) << name << " at token " << i;
    }
    std::printf(
        "[ greedy ] %s: %d of %zu prompts identical for all 64 tokens, %d parted at a near-tie\n",
        fixture_name.c_str(), exact, fx["entries"].size(), ties);
}

TEST(GreedyLlamaCpp, SmolLM2) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    check_model(path, "greedy_smollm2.json");
}

TEST(GreedyLlamaCpp, Gemma3) {
    FLUORO_REQUIRE_MODEL(path, test::kGemma3File);
    check_model(path, "greedy_gemma3.json");
}

}  // namespace
}  // namespace fluoro
