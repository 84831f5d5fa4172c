// Writes the seed corpus for gguf_fuzz: a few small, valid GGUF files made with GgufWriter
// (every value type, arrays, several tensor types, both versions, an odd alignment) and two
// tiny test models. Usage: gguf_fuzz_seeds <output directory>.
#include <filesystem>
#include <iostream>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_writer.h"
#include "gguf/test_model.h"

namespace {

using fluoro::GgmlType;
using fluoro::gguf::GgufWriter;
using fluoro::gguf::Value;
using fluoro::gguf::ValueType;
namespace fs = std::filesystem;

GgufWriter all_value_types() {
    GgufWriter w;
    w.add_string("general.architecture", "llama");
    w.add_u8("u8", 1);
    w.add_i8("i8", -1);
    w.add_u16("u16", 2);
    w.add_i16("i16", -2);
    w.add_u32("llama.block_count", 2);
    w.add_i32("i32", -3);
    w.add_u64("u64", 4);
    w.add_i64("i64", -4);
    w.add_f32("f32", 0.5f);
    w.add_f64("f64", 0.25);
    w.add_bool("bool", true);
    w.add_string_array("tokenizer.ggml.tokens", {"a", "b", "\xC4\xA0"});
    const std::vector<uint32_t> heads = {4, 2};
    w.add_u32_array("llama.attention.head_count", heads);
    w.add("bools", Value(ValueType::Array, ValueType::Bool, std::vector<bool>{true, false}));
    w.add("empty", Value(ValueType::Array, ValueType::I16, std::vector<int64_t>{}));
    return w;
}

GgufWriter with_tensors(uint32_t version, uint64_t alignment) {
    GgufWriter w(version);
    w.set_alignment(alignment);
    w.add_string("general.name", "tensors");
    const std::vector<float> x(12, 1.0f);
    w.add_tensor_f32("x", {4, 3}, x);
    w.add_tensor("q8", GgmlType::Q8_0, {32}, std::vector<std::byte>(34, std::byte{1}));
    w.add_tensor("q4k", GgmlType::Q4_K, {256}, std::vector<std::byte>(144, std::byte{2}));
    w.add_tensor("f16_4d", GgmlType::F16, {2, 1, 2, 2}, std::vector<std::byte>(16));
    return w;
}

fluoro::gguf::TestModelSpec tiny(const std::string& arch, uint32_t n_vocab) {
    fluoro::gguf::TestModelSpec s;
    s.arch = arch;
    s.n_layer = 1;
    s.n_embd = 32;
    s.n_head = 2;
    s.n_head_kv = 1;
    s.n_ff = 32;
    s.n_vocab = n_vocab;
    s.weight_type = GgmlType::Q8_0;
    return s;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::cerr << "usage: gguf_fuzz_seeds <output directory>\n";
        return 2;
    }
    const fs::path dir = argv[1];
    try {
        fs::create_directories(dir);
        GgufWriter().write(dir / "empty.gguf");
        all_value_types().write(dir / "values.gguf");
        with_tensors(3, 32).write(dir / "tensors_v3.gguf");
        with_tensors(2, 16).write(dir / "tensors_v2_align16.gguf");
        fluoro::gguf::write_test_model(dir / "tiny_llama.gguf",
                                       tiny("llama", fluoro::gguf::test_model_min_vocab("gpt2")));
        fluoro::gguf::write_test_model(dir / "tiny_gemma3.gguf",
                                       tiny("gemma3", fluoro::gguf::test_model_min_vocab("llama")));
    } catch (const std::exception& e) {
        std::cerr << "gguf_fuzz_seeds: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
