// Dequantizing the real default models' tensors, checked against gguf.quants on the same file
// (fixture dequant_model_rows.json: per tensor type, two tensors, the sha256 and first values of
// their first rows). Also pins each file's tensor type mix.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "engine/tensor/tensor_test_support.h"
#include "gguf/gguf_file.h"
#include "tensor/dequantize.h"

namespace fluoro {
namespace {

using nlohmann::json;

const json* find_model(const json& doc, const std::string& file) {
    for (const json& m : doc.at("models"))
        if (m.at("file") == file) return &m;
    ADD_FAILURE() << file << " is not in dequant_model_rows.json";
    return nullptr;
}

void check_type_mix(const gguf::GgufFile& file, const json& model) {
    std::map<std::string, int> counts;
    for (const gguf::TensorInfo& t : file.tensors()) ++counts[std::string(type_name(t.type))];
    std::map<std::string, int> expected;
    for (const auto& [type, count] : model.at("type_counts").items()) expected[type] = count;
    EXPECT_EQ(counts, expected);
}

void check_tensor_rows(const gguf::GgufFile& file, const json& entry) {
    const std::string name = entry.at("name");
    const gguf::TensorInfo* t = file.find_tensor(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(type_name(t->type), entry.at("type").get<std::string>()) << name;
    const int64_t row_len = static_cast<int64_t>(t->ne[0]);
    const uint64_t stride = *row_bytes(t->type, t->ne[0]);
    const auto data = file.tensor_data(*t);

    const json& rows = entry.at("rows");
    for (size_t r = 0; r < rows.size(); ++r) {
        ASSERT_LE((r + 1) * stride, data.size()) << name;
        std::vector<float> values(row_len);
        dequantize_row(t->type, data.data() + r * stride, values.data(), row_len);
        const auto* bytes = reinterpret_cast<const uint8_t*>(values.data());
        const std::string what = name + " row " + std::to_string(r);
        const std::vector<float> first8 =
            test::floats_from_hex(rows[r].at("first8_f32").get<std::string>());
        EXPECT_EQ(
            test::count_float_mismatches(std::span(values).first(first8.size()), first8, what), 0);
        EXPECT_EQ(test::sha256_hex({bytes, values.size() * sizeof(float)}),
                  rows[r].at("sha256").get<std::string>())
            << what;
    }
}

void check_model(const std::filesystem::path& path) {
    const json doc = test::load_fixture("dequant_model_rows.json");
    const json* model = find_model(doc, path.filename().string());
    if (model == nullptr) return;
    const gguf::GgufFile file = gguf::GgufFile::open(path);
    check_type_mix(file, *model);
    for (const json& entry : model->at("tensors")) check_tensor_rows(file, entry);
}

TEST(DequantizeRealModel, SmolLM2MatchesGguf) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    check_model(path);
}

TEST(DequantizeRealModel, Gemma3MatchesGguf) {
    FLUORO_REQUIRE_MODEL(path, test::kGemma3File);
    check_model(path);
}

}  // namespace
}  // namespace fluoro
