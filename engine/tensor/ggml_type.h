// The ggml tensor types that GGUF files store: numeric ids, block geometry and names.
// Geometry is known for every type ggml defines (so any file's tensor directory can be
// validated and listed); whether a type can be dequantized or quantized is a separate flag.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fluoro {

// Numeric values are the on-disk ggml_type ids; never renumber.
enum class GgmlType : uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q8_1 = 9,
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    Q8_K = 15,
    IQ2_XXS = 16,
    IQ2_XS = 17,
    IQ3_XXS = 18,
    IQ1_S = 19,
    IQ4_NL = 20,
    IQ3_S = 21,
    IQ2_S = 22,
    IQ4_XS = 23,
    I8 = 24,
    I16 = 25,
    I32 = 26,
    I64 = 27,
    F64 = 28,
    IQ1_M = 29,
    BF16 = 30,
    TQ1_0 = 34,
    TQ2_0 = 35,
    MXFP4 = 39,
};

struct TypeTraits {
    GgmlType type;
    std::string_view name;   // as ggml prints it: "q4_K", "bf16", ...
    uint32_t block_elems;    // elements per block (1 for plain types)
    uint32_t block_bytes;    // bytes per block
    bool dequantize;         // dequantize_row() supports it
    bool quantize;           // quantize_row() supports it
};

// Traits of a raw on-disk type id, or nullptr when ggml defines no such type.
const TypeTraits* find_type_traits(uint32_t raw_type);
// Traits of a known type (never null).
const TypeTraits& type_traits(GgmlType type);
std::string_view type_name(GgmlType type);
// "type 77 (unknown)" style text for error messages about raw ids.
std::string describe_raw_type(uint32_t raw_type);

// Bytes of a row of n_elems elements; nullopt if n_elems is not a whole number of blocks
// or the size overflows uint64.
std::optional<uint64_t> row_bytes(GgmlType type, uint64_t n_elems);

}  // namespace fluoro
