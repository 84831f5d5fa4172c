// The quant types of issue 32 part 2 (MXFP4, IQ4_XS, the IQ2/IQ3 family) against the gguf Python
// package's numpy dequantizers, bit for bit: fixtures/dequant_quant_types.json, written by
// tests/reference/make_quant_types_fixtures.py (random blocks with sane scales, plus edge scales).
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "engine/tensor/tensor_test_support.h"
#include "tensor/dequantize.h"

namespace fluoro {
namespace {

using nlohmann::json;

TEST(DequantizeQuantTypesReference, RandomAndEdgeBlocksBitExact) {
    const json doc = test::load_fixture("dequant_quant_types.json");
    EXPECT_EQ(doc.value("generator", ""), "tests/reference/make_quant_types_fixtures.py");
    EXPECT_FALSE(doc.value("gguf_version", "").empty());
    std::set<std::string> types_seen;
    for (const json& c : doc.at("cases")) {
        const std::string type_str = c.at("type");
        const auto type = test::type_from_name(type_str);
        ASSERT_TRUE(type.has_value()) << "fixture names unknown type " << type_str;
        const int64_t n = c.at("n");
        const std::vector<uint8_t> src = test::bytes_from_hex(c.at("bytes").get<std::string>());
        const std::vector<float> want =
            test::floats_from_hex(c.at("expected_f32").get<std::string>());
        ASSERT_EQ(src.size(), *row_bytes(*type, n)) << type_str;
        std::vector<float> got(n);
        dequantize_row(*type, src.data(), got.data(), n);
        const std::string what = type_str + "/" + c.value("name", "");
        EXPECT_EQ(test::count_float_mismatches(got, want, what), 0) << what;
        types_seen.insert(type_str);
    }
    const std::set<std::string> expected = {"mxfp4",   "iq4_xs", "iq2_xxs", "iq2_xs", "iq2_s",
                                            "iq3_xxs", "iq3_s",  "iq1_s",   "iq1_m"};
    EXPECT_EQ(types_seen, expected);
}

}  // namespace
}  // namespace fluoro
