// test_model writes complete, loadable models for every supported architecture.
#include "gguf/test_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "core/error.h"
#include "gguf/gguf_file.h"
#include "model/hparams.h"
#include "tensor/dequantize.h"
#include "test_temp.h"
#include "tokenizer/tokenizer.h"

namespace fluoro::gguf {
namespace {

GgufFile build(const TestModelSpec& spec) {
    std::vector<std::byte> image;
    write_test_model(image, spec);
    return GgufFile::parse(image, spec.arch + ".gguf");
}

std::set<std::string> expected_tensors(const TestModelSpec& s) {
    std::set<std::string> names = {"token_embd.weight", "output_norm.weight"};
    if (!s.tied_output) names.insert("output.weight");
    for (uint32_t il = 0; il < s.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        for (const char* n : {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm",
                              "ffn_gate", "ffn_up", "ffn_down"})
            names.insert(p + n + ".weight");
        if (s.arch == "qwen2")
            for (const char* n : {"attn_q", "attn_k", "attn_v"}) names.insert(p + n + ".bias");
        if (s.arch == "gemma3")
            for (const char* n :
                 {"attn_q_norm", "attn_k_norm", "post_attention_norm", "post_ffw_norm"})
                names.insert(p + n + ".weight");
    }
    return names;
}

std::vector<float> values(const GgufFile& f, const std::string& name) {
    const TensorInfo* t = f.find_tensor(name);
    EXPECT_NE(t, nullptr) << name;
    std::vector<float> out(t->n_elements);
    dequantize_row(t->type, f.tensor_data(*t).data(), out.data(), static_cast<int64_t>(out.size()));
    return out;
}

class GgufTestModel : public ::testing::TestWithParam<std::string> {};

TEST_P(GgufTestModel, WritesTheFullTensorSetAndHparams) {
    TestModelSpec spec;
    spec.arch = GetParam();
    const GgufFile f = build(spec);
    std::set<std::string> names;
    for (const TensorInfo& t : f.tensors()) names.insert(t.name);
    EXPECT_EQ(names, expected_tensors(spec));

    const Hparams hp = read_hparams(f);
    EXPECT_EQ(hp.arch, spec.arch);
    EXPECT_EQ(hp.n_layer, spec.n_layer);
    EXPECT_EQ(hp.n_embd, spec.n_embd);
    EXPECT_EQ(hp.n_head, std::vector<uint64_t>(spec.n_layer, spec.n_head));
    EXPECT_EQ(hp.n_head_kv, std::vector<uint64_t>(spec.n_layer, spec.n_head_kv));
    EXPECT_EQ(hp.head_dim_k, spec.n_embd / spec.n_head);
    EXPECT_EQ(hp.n_vocab, spec.n_vocab);
    EXPECT_EQ(hp.n_ctx_train, spec.n_ctx);
    EXPECT_FLOAT_EQ(static_cast<float>(hp.rms_eps), spec.rms_eps);
    EXPECT_EQ(hp.sliding_window, spec.arch == "gemma3" ? spec.sliding_window : 0u);
    const TensorInfo* k = f.find_tensor("blk.1.attn_k.weight");
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(k->ne, (std::array<uint64_t, 4>{64, 2 * 16, 1, 1}));
    EXPECT_EQ(f.find_tensor("token_embd.weight")->ne[1], spec.n_vocab);
}

TEST_P(GgufTestModel, TokenizerLoadsAndRoundTrips) {
    TestModelSpec spec;
    spec.arch = GetParam();
    const GgufFile f = build(spec);
    const auto tokens = f.find("tokenizer.ggml.tokens");
    ASSERT_NE(tokens, nullptr);
    EXPECT_EQ(tokens->array_size(), spec.n_vocab);
    const tok::Tokenizer t = tok::Tokenizer::from_gguf(f);
    const std::string text = "Hello world, the end is near \xE2\x9C\x93";
    const std::vector<int32_t> ids = t.encode(text, false, false);
    EXPECT_LT(ids.size(), text.size());  // some merges applied
    EXPECT_EQ(t.decode(ids, false), text);
}

TEST_P(GgufTestModel, WeightsAreSeededAndScaled) {
    TestModelSpec spec;
    spec.arch = GetParam();
    const GgufFile f = build(spec);
    for (const float v : values(f, "blk.0.attn_norm.weight")) EXPECT_NEAR(v, 1.0f, 0.1f);
    const std::vector<float> w = values(f, "blk.0.ffn_down.weight");  // fan_in = n_ff = 128
    double sum_sq = 0;
    for (const float v : w) {
        EXPECT_LE(std::fabs(v), 1.0f / std::sqrt(128.0f));
        sum_sq += v * v;
    }
    EXPECT_GT(sum_sq / w.size(), 0.2 / 128);  // not all zero: uniform variance is a^2/3
    // Same seed, same bytes; another seed, other weights.
    std::vector<std::byte> a, b, c;
    write_test_model(a, spec);
    write_test_model(b, spec);
    spec.seed += 1;
    write_test_model(c, spec);
    EXPECT_EQ(a, b);
    EXPECT_NE(a, c);
}

INSTANTIATE_TEST_SUITE_P(Archs, GgufTestModel, ::testing::Values("llama", "qwen2", "gemma3"),
                         [](const auto& p) { return p.param; });

TEST(GgufTestModelOptions, QuantizedWeightsAndPerTensorTypes) {
    for (const GgmlType type : {GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0,
                                GgmlType::Q4_1, GgmlType::Q5_0}) {
        TestModelSpec spec;
        spec.weight_type = type;
        spec.tensor_types["token_embd.weight"] = GgmlType::Q8_0;
        const GgufFile f = build(spec);
        EXPECT_EQ(f.find_tensor("blk.0.attn_q.weight")->type, type);
        EXPECT_EQ(f.find_tensor("blk.0.attn_norm.weight")->type, GgmlType::F32);
        EXPECT_EQ(f.find_tensor("token_embd.weight")->type, GgmlType::Q8_0);
        for (const float v : values(f, "blk.0.ffn_up.weight")) EXPECT_LE(std::fabs(v), 0.2f);
    }
}

TEST(GgufTestModelOptions, LayoutOptions) {
    TestModelSpec spec;
    spec.arch = "qwen2";
    spec.head_dim = 32;  // != n_embd / n_head: key_length is written
    spec.per_layer_arrays = true;
    spec.tied_output = false;
    spec.version = 2;
    spec.alignment = 64;
    spec.tokenizer = "llama";
    spec.n_layer = 3;
    const GgufFile f = build(spec);
    EXPECT_EQ(f.version(), 2u);
    EXPECT_EQ(f.alignment(), 64u);
    EXPECT_TRUE(f.find("qwen2.attention.head_count")->is_array());
    EXPECT_EQ(f.get_string("tokenizer.ggml.model"), "llama");
    EXPECT_NE(f.find_tensor("output.weight"), nullptr);
    const Hparams hp = read_hparams(f);
    EXPECT_EQ(hp.head_dim_k, 32u);
    EXPECT_EQ(hp.n_head, std::vector<uint64_t>(3, 4));
    EXPECT_EQ(f.find_tensor("blk.2.attn_q.weight")->ne[1], 4u * 32u);
    EXPECT_EQ(f.find_tensor("blk.2.attn_output.weight")->ne[0], 4u * 32u);
}

TEST(GgufTestModelOptions, WritesToAFile) {
    const auto path = test::unique_temp_path("fluoro_test_model.gguf");
    write_test_model(path, TestModelSpec{});
    const GgufFile f = GgufFile::open(path);
    EXPECT_EQ(f.get_string("general.architecture"), "llama");
    std::filesystem::remove(path);
}

TEST(GgufTestModelOptions, RejectsBadSpecs) {
    TestModelSpec spec;
    spec.arch = "mamba";
    EXPECT_THROW(make_test_model(spec), Error);
    spec = {};
    spec.n_vocab = 10;
    EXPECT_THROW(make_test_model(spec), Error);
    spec = {};
    spec.n_head_kv = 3;
    EXPECT_THROW(make_test_model(spec), Error);
    spec = {};
    spec.weight_type = GgmlType::Q4_K;  // rows of 64 are not whole 256-blocks
    EXPECT_THROW(make_test_model(spec), Error);
    spec = {};
    spec.n_embd = 256;
    spec.weight_type = GgmlType::Q2_K;  // geometry fits; no quantizer
    spec.n_ff = 256;
    EXPECT_THROW(make_test_model(spec), UnsupportedError);
    EXPECT_GE(test_model_min_vocab("gpt2"), 256u + 3u);
    EXPECT_GE(test_model_min_vocab("llama"), 256u + 6u);
    EXPECT_LE(test_model_min_vocab("llama"), TestModelSpec{}.n_vocab);
    EXPECT_THROW(test_model_min_vocab("bert"), Error);
}

}  // namespace
}  // namespace fluoro::gguf
