// Our CPU dot kernels against ggml-cpu itself, on the rows in fixtures/vec_dot_ggml.json (written
// by make_vec_dot_fixture.py from the llama-cpp-python wheel's libggml-cpu; the newer quant types
// in fixtures/vec_dot_ggml_quant_types.json by make_vec_dot_quant_types_fixture.py):
//  - ggml's SIMD kernels (what llama.cpp runs) and its scalar ggml_vec_dot_*_generic: within 1e-6
//    of Σ|ŵ·x̂| (float32 rounding of the block sums), for our kernels on every instruction set. Our
//    kernels copy the generic code's float operations in order, and agree with it bit for bit where
//    the compiler kept that order; the wheel was built by GCC 12 with -march=native and its default
//    -ffp-contract=fast, which fuses some of those multiply-adds into FMAs, so a few cases differ
//    by an ulp.
//  - The wheel's q5_0 generic function returns unrelated values (its SIMD q5_0 kernel agrees with
//    ours and with dequantize_row), so the fixture stores null for it.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/cpu/kernels/vec_dot.h"
#include "engine/backend/kernel_test_support.h"
#include "engine/tensor/tensor_test_support.h"
#include "tensor/dequantize.h"
#include "test_paths.h"

namespace fluoro::cpu {
namespace {

// Not from __FILE__: a compiler launcher (ccache with base_dir) may make that relative.
std::filesystem::path fixture_path(const std::string& file) {
    return std::filesystem::path(FLUORO_TESTS_DIR) / "engine" / "backend" / "fixtures" / file;
}

GgmlType type_named(const std::string& name) {
    for (uint32_t id = 0; id < 64; ++id) {
        if (const TypeTraits* t = find_type_traits(id); t && t->name == name) return t->type;
    }
    ADD_FAILURE() << "unknown type " << name;
    return GgmlType::F32;
}

float float_from_hex(const std::string& hex) {
    return test::floats_from_hex(hex).at(0);
}

void check_against_ggml(const std::string& file) {
    std::ifstream in(fixture_path(file));
    ASSERT_TRUE(in) << "missing fixture " << fixture_path(file);
    const nlohmann::json doc = nlohmann::json::parse(in);
    const std::vector<CpuIsa> isas = test::supported_isas();

    int checked_generic = 0, exact_generic = 0;
    double worst_simd = 0;  // max |ours − SIMD| / Σ|ŵ·x̂|
    for (const auto& c : doc.at("cases")) {
        const GgmlType type = type_named(c.at("type").get<std::string>());
        const int64_t n = c.at("n").get<int64_t>();
        const std::vector<uint8_t> w = test::bytes_from_hex(c.at("w").get<std::string>());
        const std::vector<uint8_t> x = test::bytes_from_hex(c.at("x_partner").get<std::string>());
        const std::string what = c.at("type").get<std::string>() + " n=" + std::to_string(n);

        std::vector<float> w_hat(n), x_hat(n);
        dequantize_row(type, w.data(), w_hat.data(), n);
        dequantize_row(vec_dot_partner(type), x.data(), x_hat.data(), n);
        double scale = 0;
        for (int64_t i = 0; i < n; ++i) scale += std::fabs(double(w_hat[i]) * x_hat[i]);

        for (CpuIsa isa : isas) {
            float got;
            row_dot_fn(type, isa)(w.data(), x.data(), 0, 1, n, &got);
            if (!c.at("ggml_generic").is_null()) {
                const float want = float_from_hex(c.at("ggml_generic").get<std::string>());
                EXPECT_LE(std::fabs(double(got) - want), 1e-6 * scale)
                    << what << ": ours " << got << ", ggml generic " << want;
                if (isa == CpuIsa::Generic) {
                    ++checked_generic;
                    exact_generic += std::bit_cast<uint32_t>(got) == std::bit_cast<uint32_t>(want);
                }
            }
            const float simd = float_from_hex(c.at("ggml_simd").get<std::string>());
            worst_simd = std::max(worst_simd, std::fabs(double(got) - simd) / scale);
            EXPECT_LE(std::fabs(double(got) - simd), 1e-6 * scale)
                << what << ": ours " << got << ", ggml SIMD " << simd;
        }
    }
    EXPECT_GT(checked_generic, 0);
    if (std::getenv("FLUORO_KERNEL_STATS")) {
        std::printf(
            "ggml generic: %d of %d results bit-identical; ggml SIMD: max diff %.2e of "
            "Σ|wx|\n",
            exact_generic, checked_generic, worst_simd);
    }
}

TEST(CpuKernelGgml, MatchesGgmlGenericAndSimdWithinRounding) {
    check_against_ggml("vec_dot_ggml.json");
}

// MXFP4, IQ4_XS and the IQ2/IQ3 family: fixtures/vec_dot_ggml_quant_types.json, written by
// make_vec_dot_quant_types_fixture.py in the same way.
TEST(CpuKernelGgml, QuantTypesMatchGgmlGenericAndSimdWithinRounding) {
    check_against_ggml("vec_dot_ggml_quant_types.json");
}

}  // namespace
}  // namespace fluoro::cpu
