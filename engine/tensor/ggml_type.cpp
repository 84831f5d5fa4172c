#include "tensor/ggml_type.h"

#include <array>

namespace fluoro {
namespace {

// Geometry from ggml's block structs (ggml-common.h). dequantize/quantize flags say what
// engine/tensor implements.
constexpr std::array kTypes = {
    TypeTraits{GgmlType::F32, "f32", 1, 4, true, true},
    TypeTraits{GgmlType::F16, "f16", 1, 2, true, true},
    TypeTraits{GgmlType::Q4_0, "q4_0", 32, 18, true, true},
    TypeTraits{GgmlType::Q4_1, "q4_1", 32, 20, true, true},
    TypeTraits{GgmlType::Q5_0, "q5_0", 32, 22, true, true},
    TypeTraits{GgmlType::Q5_1, "q5_1", 32, 24, true, true},
    TypeTraits{GgmlType::Q8_0, "q8_0", 32, 34, true, true},
    TypeTraits{GgmlType::Q8_1, "q8_1", 32, 36, true, true},
    TypeTraits{GgmlType::Q2_K, "q2_K", 256, 84, true, false},
    TypeTraits{GgmlType::Q3_K, "q3_K", 256, 110, true, false},
    TypeTraits{GgmlType::Q4_K, "q4_K", 256, 144, true, false},
    TypeTraits{GgmlType::Q5_K, "q5_K", 256, 176, true, false},
    TypeTraits{GgmlType::Q6_K, "q6_K", 256, 210, true, false},
    TypeTraits{GgmlType::Q8_K, "q8_K", 256, 292, true, true},
    TypeTraits{GgmlType::IQ2_XXS, "iq2_xxs", 256, 66, true, false},
    TypeTraits{GgmlType::IQ2_XS, "iq2_xs", 256, 74, true, false},
    TypeTraits{GgmlType::IQ3_XXS, "iq3_xxs", 256, 98, true, false},
    TypeTraits{GgmlType::IQ1_S, "iq1_s", 256, 50, true, false},
    TypeTraits{GgmlType::IQ4_NL, "iq4_nl", 32, 18, true, false},
    TypeTraits{GgmlType::IQ3_S, "iq3_s", 256, 110, true, false},
    TypeTraits{GgmlType::IQ2_S, "iq2_s", 256, 82, true, false},
    TypeTraits{GgmlType::IQ4_XS, "iq4_xs", 256, 136, true, false},
    TypeTraits{GgmlType::I8, "i8", 1, 1, false, false},
    TypeTraits{GgmlType::I16, "i16", 1, 2, false, false},
    TypeTraits{GgmlType::I32, "i32", 1, 4, false, false},
    TypeTraits{GgmlType::I64, "i64", 1, 8, false, false},
    TypeTraits{GgmlType::F64, "f64", 1, 8, false, false},
    TypeTraits{GgmlType::IQ1_M, "iq1_m", 256, 56, true, false},
    TypeTraits{GgmlType::BF16, "bf16", 1, 2, true, true},
    TypeTraits{GgmlType::TQ1_0, "tq1_0", 256, 54, false, false},
    TypeTraits{GgmlType::TQ2_0, "tq2_0", 256, 66, false, false},
    TypeTraits{GgmlType::MXFP4, "mxfp4", 32, 17, true, false},
};

}  // namespace

const TypeTraits* find_type_traits(uint32_t raw_type) {
    for (const auto& t : kTypes)
        if (static_cast<uint32_t>(t.type) == raw_type) return &t;
    return nullptr;
}

const TypeTraits& type_traits(GgmlType type) {
    return *find_type_traits(static_cast<uint32_t>(type));
}

std::string_view type_name(GgmlType type) {
    return type_traits(type).name;
}

std::string describe_raw_type(uint32_t raw_type) {
    if (const TypeTraits* t = find_type_traits(raw_type)) return std::string(t->name);
    return "type " + std::to_string(raw_type) + " (unknown to ggml)";
}

std::optional<uint64_t> row_bytes(GgmlType type, uint64_t n_elems) {
    const TypeTraits& t = type_traits(type);
    if (n_elems % t.block_elems != 0) return std::nullopt;
    const uint64_t blocks = n_elems / t.block_elems;
    if (blocks != 0 && t.block_bytes > UINT64_MAX / blocks) return std::nullopt;
    return blocks * t.block_bytes;
}

}  // namespace fluoro
