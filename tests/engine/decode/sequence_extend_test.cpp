// Sequence::extend is speculative verification's forward pass: each of its rows must be exactly
// (bit for bit) what decode() computes for that token, whatever the batch size, so greedy
// speculative decoding reproduces plain decoding exactly (batch-invariant kernels).
#include <gtest/gtest.h>

#include <cstring>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "decode/sequence.h"
#include "gguf/test_model.h"
#include "model/model.h"
#include "test_models.h"
#include "test_temp.h"

namespace fluoro {
namespace {

// Row i of extend(tokens) against decode(tokens[i]) after the same prefix, for batch sizes 2..8.
void expect_extend_rows_equal_decode(Model& model, std::span<const int32_t> prompt,
                                     std::span<const int32_t> tokens) {
    auto kv = model.create_kv(512, 1, KvType::F16);
    Sequence seq(model, *kv, 0);
    const auto n_vocab = size_t(model.n_vocab());
    seq.prefill(prompt);
    std::vector<std::vector<float>> single;
    for (const int32_t t : tokens) {
        const auto l = seq.decode(t);
        single.emplace_back(l.begin(), l.end());
    }
    for (size_t n = 2; n <= tokens.size(); ++n) {
        seq.truncate(int64_t(prompt.size()));
        const auto rows = seq.extend(tokens.first(n));
        ASSERT_EQ(rows.size(), n * n_vocab);
        for (size_t i = 0; i < n; ++i) {
            const bool same = std::memcmp(rows.data() + i * n_vocab, single[i].data(),
                                          n_vocab * sizeof(float)) == 0;
            EXPECT_TRUE(same) << "row " << i << " of a " << n << "-token batch differs from decode";
        }
    }
}

TEST(SequenceExtend, RowsEqualDecodeBitForBitOnASmallModel) {
    gguf::TestModelSpec spec;
    spec.weight_type = GgmlType::Q8_0;
    const auto path = test::unique_temp_path("extend_small.gguf");
    gguf::write_test_model(path, spec);
    cpu::CpuBackend be(2);
    auto model = Model::load(path, be);
    const std::vector<int32_t> prompt{5, 17, 42, 99, 3, 7, 250, 11, 60};
    const std::vector<int32_t> tokens{61, 62, 5, 17, 42, 300, 1, 2};
    expect_extend_rows_equal_decode(*model, prompt, tokens);
}

TEST(SequenceExtend, RowsEqualDecodeBitForBitOnSmolLM2) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    cpu::CpuBackend be(2);
    auto model = Model::load(path, be);
    const std::vector<int32_t> prompt =
        model->tokenizer().encode("The quick brown fox jumps over", true, false);
    const std::vector<int32_t> tokens = model->tokenizer().encode(
        " the lazy dog and then runs far away from the farm", false, false);
    ASSERT_GE(tokens.size(), 8u);
    expect_extend_rows_equal_decode(*model, prompt, std::span(tokens).first(8));
}

TEST(SequenceExtend, RowsEqualDecodeBitForBitAtLongContext) {
    // Long enough for decode's attention to split the keys across threads.
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    cpu::CpuBackend be(2);
    auto model = Model::load(path, be);
    std::string text;
    for (int i = 0; i < 60; ++i) text += "Sentence number " + std::to_string(i) + " is here. ";
    const std::vector<int32_t> prompt = model->tokenizer().encode(text, true, false);
    ASSERT_GT(prompt.size(), 400u);
    const std::vector<int32_t> tokens = model->tokenizer().encode(
        " the lazy dog and then runs far away from the farm", false, false);
    ASSERT_GE(tokens.size(), 8u);
    expect_extend_rows_equal_decode(*model, prompt, std::span(tokens).first(8));
}

TEST(SequenceExtend, RowsEqualDecodeBitForBitOnGemma3) {
    FLUORO_REQUIRE_MODEL(path, test::kGemma3File);
    cpu::CpuBackend be(2);
    auto model = Model::load(path, be);
    const std::vector<int32_t> prompt =
        model->tokenizer().encode("The quick brown fox jumps over", true, false);
    const std::vector<int32_t> tokens =
        model->tokenizer().encode(" the lazy dog and runs far away from home", false, false);
    ASSERT_GE(tokens.size(), 8u);
    expect_extend_rows_equal_decode(*model, prompt, std::span(tokens).first(8));
}

TEST(SequenceExtend, RefusesWhatDoesNotFit) {
    gguf::TestModelSpec spec;
    const auto path = test::unique_temp_path("extend_fit.gguf");
    gguf::write_test_model(path, spec);
    cpu::CpuBackend be(1);
    auto model = Model::load(path, be);
    auto kv = model->create_kv(8, 1, KvType::F16);
    Sequence seq(*model, *kv, 0);
    seq.prefill(std::vector<int32_t>{1, 2, 3, 4, 5, 6});
    EXPECT_THROW(seq.extend(std::vector<int32_t>{7, 8, 9}), Error);
    EXPECT_THROW(seq.extend({}), Error);
    EXPECT_EQ(seq.tokens().size(), 6u);
    EXPECT_NO_THROW(seq.extend(std::vector<int32_t>{7, 8}));
}

}  // namespace
}  // namespace fluoro
