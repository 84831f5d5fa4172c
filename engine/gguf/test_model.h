// Small synthetic models for tests: a complete GGUF (hyperparameter keys, a tiny tokenizer and
// the full tensor set llama.cpp expects) for the llama, qwen2, qwen3, gemma3 and granite
// architectures, with seeded random weights, so model loading, forward passes and the tokenizer can
// be tested end to end without the real model files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf_writer.h"
#include "tensor/ggml_type.h"

namespace fluoro::gguf {

struct TestModelSpec {
    std::string arch = "llama";  // "llama", "qwen2", "qwen3", "gemma3", "granite", "phi3",
                                 // or "mistral3" / "smollm3" (llama's tensors)
    uint32_t n_layer = 2;
    uint32_t n_embd = 64;
    uint32_t n_head = 4;
    uint32_t n_head_kv = 2;
    uint32_t head_dim = 0;  // 0: n_embd / n_head (gemma3 writes key/value_length always)
    // attention.value_length as written (0: head_dim); the tensors keep head_dim. A file that
    // disagrees with itself, for the load checks.
    uint32_t value_length = 0;
    uint32_t n_ff = 128;
    uint32_t n_vocab = 512;  // at least test_model_min_vocab(); extra ids are unused tokens
    uint32_t n_ctx = 256;    // <arch>.context_length
    float rope_base = 10000.0f;
    float rms_eps = 1e-5f;
    uint32_t sliding_window = 64;  // gemma3 only: <arch>.attention.sliding_window
    // "" picks the architecture's usual tokenizer: "gpt2" (byte-level BPE) for llama and qwen2,
    // "llama" (SentencePiece-style with <0xNN> byte tokens) for gemma3.
    std::string tokenizer;
    GgmlType weight_type = GgmlType::F32;          // 2-D tensors (projections, token_embd, output)
    GgmlType norm_type = GgmlType::F32;            // 1-D tensors (norms, biases)
    std::map<std::string, GgmlType> tensor_types;  // per-tensor override by full name
    bool tied_output = true;                       // false: also write output.weight
    bool per_layer_arrays = false;                 // head counts and n_ff as per-layer arrays
    uint32_t version = 3;
    uint64_t alignment = 32;
    uint64_t seed = 42;
};

// Size of the built-in vocabulary for a tokenizer model ("gpt2" or "llama").
uint32_t test_model_min_vocab(std::string_view tokenizer_model);

// A writer holding the whole model, for callers that want to add keys or tensors before
// writing. Throws Error on an inconsistent spec (unknown arch, n_vocab too small, a row length
// that is not a whole number of blocks) and UnsupportedError for a type that cannot be
// quantized.
GgufWriter make_test_model(const TestModelSpec& spec);
void write_test_model(const std::filesystem::path& path, const TestModelSpec& spec);
void write_test_model(std::vector<std::byte>& out, const TestModelSpec& spec);

}  // namespace fluoro::gguf
