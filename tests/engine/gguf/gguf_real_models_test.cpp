// The two real default models open, and their metadata and tensor directories are consistent.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "gguf/gguf_file.h"
#include "test_models.h"

namespace fluoro::gguf {
namespace {

std::map<GgmlType, int> type_counts(const GgufFile& f) {
    std::map<GgmlType, int> counts;
    for (const TensorInfo& t : f.tensors()) ++counts[t.type];
    return counts;
}

// Every tensor's bytes are inside the file, in directory-independent offset order no two
// overlap, and tensor_data() hands out exactly n_bytes.
void expect_directory_consistent(const GgufFile& f) {
    std::vector<const TensorInfo*> by_offset;
    for (const TensorInfo& t : f.tensors()) {
        EXPECT_LE(f.data_offset() + t.offset + t.n_bytes, f.file_size()) << t.name;
        EXPECT_EQ(t.offset % f.alignment(), 0u) << t.name;
        EXPECT_EQ(f.tensor_data(t).size(), t.n_bytes) << t.name;
        EXPECT_EQ(f.find_tensor(t.name), &t);
        by_offset.push_back(&t);
    }
    std::sort(by_offset.begin(), by_offset.end(),
              [](auto* a, auto* b) { return a->offset < b->offset; });
    for (size_t i = 1; i < by_offset.size(); ++i)
        EXPECT_LE(by_offset[i - 1]->offset + by_offset[i - 1]->n_bytes, by_offset[i]->offset);
    const TensorInfo* last = by_offset.back();
    EXPECT_EQ(f.data_offset() + last->offset + last->n_bytes, f.file_size());  // no trailing junk
}

TEST(GgufRealModels, SmolLM2) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    const GgufFile f = GgufFile::open(path);
    EXPECT_EQ(f.version(), 3u);
    EXPECT_EQ(f.alignment(), 32u);
    EXPECT_EQ(f.get_string("general.architecture"), "llama");
    EXPECT_EQ(f.require_uint("llama.block_count"), 30u);
    EXPECT_EQ(f.require_uint("llama.embedding_length"), 576u);
    EXPECT_EQ(f.get_uint_per_layer("llama.attention.head_count", 30), std::vector<uint64_t>(30, 9));
    EXPECT_EQ(f.get_uint("llama.attention.head_count_kv"), 3u);
    EXPECT_EQ(f.get_float("llama.rope.freq_base"), 100000.0);
    EXPECT_EQ(f.get_uint("general.file_type"), 3u);  // MOSTLY_Q4_1
    EXPECT_EQ(f.get_string("tokenizer.ggml.model"), "gpt2");
    EXPECT_EQ(f.get_string("tokenizer.ggml.pre"), "smollm");
    EXPECT_EQ(f.get_bool("tokenizer.ggml.add_bos_token"), false);
    EXPECT_EQ(f.find("tokenizer.ggml.tokens")->array_size(), 49152u);
    EXPECT_EQ(f.find("tokenizer.ggml.merges")->array_size(), 48900u);

    // 30 layers x 9 tensors + token_embd + output_norm; output is tied to token_embd.
    ASSERT_EQ(f.tensors().size(), 272u);
    EXPECT_EQ(f.find_tensor("output.weight"), nullptr);
    const TensorInfo* embd = f.find_tensor("token_embd.weight");
    ASSERT_NE(embd, nullptr);
    EXPECT_EQ(embd->type, GgmlType::Q8_0);
    EXPECT_EQ(embd->ne, (std::array<uint64_t, 4>{576, 49152, 1, 1}));
    const TensorInfo* q = f.find_tensor("blk.29.attn_q.weight");
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q->type, GgmlType::Q4_1);
    EXPECT_EQ(f.find_tensor("blk.0.attn_k.weight")->ne[1], 192u);  // 3 kv heads x 64
    const auto counts = type_counts(f);
    EXPECT_EQ(counts.at(GgmlType::F32), 61);
    EXPECT_EQ(counts.at(GgmlType::Q4_1), 210);
    EXPECT_EQ(counts.at(GgmlType::Q8_0), 1);
    expect_directory_consistent(f);
}

TEST(GgufRealModels, Gemma3) {
    FLUORO_REQUIRE_MODEL(path, test::kGemma3File);
    const GgufFile f = GgufFile::open(path);
    EXPECT_EQ(f.version(), 3u);
    EXPECT_EQ(f.get_string("general.architecture"), "gemma3");
    EXPECT_EQ(f.require_uint("gemma3.block_count"), 18u);
    EXPECT_EQ(f.require_uint("gemma3.embedding_length"), 640u);
    EXPECT_EQ(f.get_uint("gemma3.attention.head_count"), 4u);
    EXPECT_EQ(f.get_uint("gemma3.attention.head_count_kv"), 1u);
    EXPECT_EQ(f.get_uint("gemma3.attention.key_length"), 256u);
    EXPECT_EQ(f.get_uint("gemma3.attention.sliding_window"), 512u);
    EXPECT_EQ(f.get_float("gemma3.rope.freq_base"), 1e6);
    EXPECT_EQ(f.get_uint("general.file_type"), 15u);  // MOSTLY_Q4_K_M
    EXPECT_EQ(f.get_string("tokenizer.ggml.model"), "llama");
    EXPECT_EQ(f.find("tokenizer.ggml.tokens")->array_size(), 262144u);
    EXPECT_EQ(f.find("tokenizer.ggml.scores")->array_size(), 262144u);

    // 18 layers x 13 tensors + token_embd + output_norm.
    ASSERT_EQ(f.tensors().size(), 236u);
    EXPECT_EQ(f.find_tensor("output.weight"), nullptr);
    EXPECT_EQ(f.find_tensor("token_embd.weight")->ne, (std::array<uint64_t, 4>{640, 262144, 1, 1}));
    EXPECT_EQ(f.find_tensor("blk.17.attn_q_norm.weight")->ne[0], 256u);
    ASSERT_NE(f.find_tensor("blk.5.post_ffw_norm.weight"), nullptr);
    const auto counts = type_counts(f);
    EXPECT_EQ(counts.at(GgmlType::F32), 109);
    EXPECT_EQ(counts.at(GgmlType::Q4_K), 27);
    EXPECT_EQ(counts.at(GgmlType::Q5_0), 81);
    EXPECT_EQ(counts.at(GgmlType::Q6_K), 9);
    EXPECT_EQ(counts.at(GgmlType::Q8_0), 10);
    expect_directory_consistent(f);
}

}  // namespace
}  // namespace fluoro::gguf
