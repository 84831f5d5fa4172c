// Bit-exact comparison with the gguf Python package (gguf.quants), an implementation nobody
// here wrote. The fixtures are written by tests/reference/make_dequant_fixtures.py and record
// the gguf/numpy versions that produced them.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "engine/tensor/tensor_test_support.h"
#include "tensor/dequantize.h"
#include "tensor/quantize.h"

namespace fluoro {
namespace {

using nlohmann::json;

void expect_provenance(const json& doc) {
    EXPECT_EQ(doc.value("generator", ""), "tests/reference/make_dequant_fixtures.py");
    EXPECT_FALSE(doc.value("gguf_version", "").empty());
    EXPECT_FALSE(doc.value("numpy_version", "").empty());
}

GgmlType fixture_type(const json& entry) {
    const std::string name = entry.at("type");
    const auto type = test::type_from_name(name);
    if (!type) ADD_FAILURE() << "fixture names unknown type " << name;
    return type.value_or(GgmlType::F32);
}

TEST(DequantizeGgufReference, RandomBlocksBitExact) {
    const json doc = test::load_fixture("dequant_random_blocks.json");
    expect_provenance(doc);
    std::set<std::string> types_seen;
    for (const json& c : doc.at("cases")) {
        const GgmlType type = fixture_type(c);
        const int64_t n = c.at("n");
        const std::vector<uint8_t> src = test::bytes_from_hex(c.at("bytes").get<std::string>());
        const std::vector<float> want =
            test::floats_from_hex(c.at("expected_f32").get<std::string>());
        ASSERT_EQ(src.size(), *row_bytes(type, n)) << c.at("type");

        std::vector<float> got(n);
        dequantize_row(type, src.data(), got.data(), n);
        const std::string what = c.at("type").get<std::string>() + "/" + c.value("name", "");
        EXPECT_EQ(test::count_float_mismatches(got, want, what), 0) << what;
        types_seen.insert(c.at("type"));
    }
    // Every type gguf can dequantize among ours (Q8_1 and Q8_K it cannot).
    const std::set<std::string> expected = {"f32",  "f16",  "bf16", "q4_0",  "q4_1",
                                            "q5_0", "q5_1", "q8_0", "q2_K",  "q3_K",
                                            "q4_K", "q5_K", "q6_K", "iq4_nl"};
    EXPECT_EQ(types_seen, expected);
}

TEST(QuantizeGgufReference, RowsBitExact) {
    const json doc = test::load_fixture("quantize_rows.json");
    expect_provenance(doc);
    int checked = 0;
    for (const json& c : doc.at("cases")) {
        const int64_t n = c.at("n");
        const std::vector<float> x = test::floats_from_hex(c.at("input_f32").get<std::string>());
        ASSERT_EQ(static_cast<int64_t>(x.size()), n);
        for (const auto& [type_str, hex] : c.at("expected").items()) {
            const GgmlType type = *test::type_from_name(type_str);
            std::vector<uint8_t> got(*row_bytes(type, n));
            quantize_row(type, x.data(), got.data(), n);
            EXPECT_EQ(test::hex_from_bytes(got), hex.get<std::string>())
                << type_str << " on row " << c.at("name");
            ++checked;
        }
    }
    EXPECT_GE(checked, 60);
}

}  // namespace
}  // namespace fluoro
