// Properties of the forward pass on small seeded models written by our GGUF writer (no download):
// every architecture loads and runs; a prompt prefilled in one batch gives the same logits as fed
// token by token; two sequences batched together give the same logits as run alone; quantized
// weights work; the KV of a shared prefix is reused.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "decode/sequence.h"
#include "gguf/test_model.h"
#include "model/model.h"
#include "test_temp.h"

namespace fluoro {
namespace {

using gguf::GgufWriter;
using gguf::make_test_model;
using gguf::TestModelSpec;
using gguf::write_test_model;

std::filesystem::path write_model(const TestModelSpec& spec, const std::string& name) {
    const auto path = test::unique_temp_path(name + ".gguf");
    write_test_model(path, spec);
    return path;
}

std::vector<float> copy(std::span<const float> s) {
    return {s.begin(), s.end()};
}

float max_abs_diff(std::span<const float> a, std::span<const float> b) {
    float m = 0;
    for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
    return m;
}

class EveryArch : public testing::TestWithParam<std::string> {};

TEST_P(EveryArch, BatchedPrefillEqualsTokenByToken) {
    TestModelSpec spec;
    spec.arch = GetParam();
    spec.sliding_window = 4;  // gemma3: exercise the window with an 11-token prompt
    spec.n_layer = spec.arch == "gemma3" ? 6 : 3;  // gemma3: layer 5 is global
    const auto path = write_model(spec, "consistency_" + spec.arch);
    cpu::CpuBackend be(2);
    auto model = Model::load(path, be);
    auto kv = model->create_kv(64, 1, KvType::F32);
    const std::vector<int32_t> prompt{5, 17, 42, 99, 3, 7, 250, 11, 60, 61, 62};
    Sequence seq(*model, *kv, 0);
    const std::vector<float> batched = copy(seq.prefill(prompt));
    seq.reset();
    std::span<const float> last = seq.prefill(std::span(prompt).first(1));
    for (size_t i = 1; i < prompt.size(); ++i) last = seq.decode(prompt[i]);
    EXPECT_LE(max_abs_diff(batched, last), 1e-4f) << spec.arch;
}

TEST_P(EveryArch, QuantizedWeightsRun) {
    TestModelSpec spec;
    spec.arch = GetParam();
    spec.weight_type = GgmlType::Q8_0;
    const auto path = write_model(spec, "q8_" + spec.arch);
    cpu::CpuBackend be(1);
    auto model = Model::load(path, be);
    auto kv = model->create_kv(32, 1, KvType::F16);
    Sequence seq(*model, *kv, 0);
    const std::vector<int32_t> prompt{1, 2, 3, 4};
    const auto logits = seq.prefill(prompt);
    ASSERT_EQ(int64_t(logits.size()), model->n_vocab());
    for (float l : logits) ASSERT_TRUE(std::isfinite(l));
}

INSTANTIATE_TEST_SUITE_P(Arch, EveryArch, testing::Values("llama", "qwen2", "gemma3"));

TEST(EngineConsistency, TwoSequencesInOneBatchEqualSeparateRuns) {
    const auto path = write_model(TestModelSpec{}, "two_seq");
    cpu::CpuBackend be(2);
    ModelLoadOptions opt;
    opt.max_logit_rows = 2;
    auto model = Model::load(path, be, opt);
    auto kv = model->create_kv(32, 2, KvType::F32);
    const std::vector<int32_t> tokens{10, 20, 30, 40, 50, 60, 70};
    const std::vector<int32_t> pos{0, 1, 2, 3, 0, 1, 2}, seq{0, 0, 0, 0, 1, 1, 1}, rows{3, 6};
    const auto both = model->forward({tokens, pos, seq, rows}, *kv);
    const std::vector<float> joint(both.begin(), both.end());
    const int64_t nv = model->n_vocab();
    auto kv1 = model->create_kv(32, 1, KvType::F32);
    Sequence a(*model, *kv1, 0);
    const std::vector<float> first = copy(a.prefill(std::span(tokens).first(4)));
    a.reset();
    const auto second = a.prefill(std::span(tokens).subspan(4));
    EXPECT_LE(max_abs_diff(std::span(joint).first(size_t(nv)), first), 1e-5f);
    EXPECT_LE(max_abs_diff(std::span(joint).subspan(size_t(nv)), second), 1e-5f);
}

TEST(EngineConsistency, PrefixIsReusedAndResultUnchanged) {
    const auto path = write_model(TestModelSpec{}, "reuse");
    cpu::CpuBackend be(2);
    auto model = Model::load(path, be);
    auto kv = model->create_kv(64, 1, KvType::F16);
    Sequence seq(*model, *kv, 0);
    const std::vector<int32_t> turn1{1, 2, 3, 4, 5}, turn2{1, 2, 3, 4, 5, 6, 7, 8};
    PrefillStats st;
    seq.prefill(turn1, &st);
    EXPECT_EQ(st.reused_tokens, 0);
    const std::vector<float> reused = copy(seq.prefill(turn2, &st));
    EXPECT_EQ(st.reused_tokens, 5);  // turn 1 stays cached; only turn 2's new tokens run
    EXPECT_EQ(st.computed_tokens, 3);
    seq.reset();
    const auto fresh = seq.prefill(turn2, &st);
    EXPECT_EQ(st.reused_tokens, 0);
    EXPECT_LE(max_abs_diff(reused, fresh), 1e-5f);
}

TEST(EngineBadInput, ClearErrorsAndTheModelStaysUsable) {
    const auto path = write_model(TestModelSpec{}, "bad_input");
    cpu::CpuBackend be(1);
    auto model = Model::load(path, be);
    auto kv = model->create_kv(8, 1, KvType::F16);
    Sequence seq(*model, *kv, 0);
    EXPECT_THROW(seq.prefill(std::vector<int32_t>{}), Error);
    try {
        seq.prefill(std::vector<int32_t>(9, 1));
        FAIL() << "expected an error for a prompt longer than the context";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("9 tokens"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("8"), std::string::npos) << e.what();
    }
    EXPECT_THROW(seq.prefill(std::vector<int32_t>{1, int32_t(model->n_vocab())}), Error);
    EXPECT_THROW(seq.prefill(std::vector<int32_t>{-1}), Error);
    // After the errors the model still works, and the context-full error is clean.
    seq.prefill(std::vector<int32_t>(8, 1));
    EXPECT_THROW(seq.decode(1), Error);
    seq.reset();
    EXPECT_NO_THROW(seq.prefill(std::vector<int32_t>{1, 2, 3}));
}

TEST(EngineBadInput, UnknownArchitectureNamesTheSupportedOnes) {
    TestModelSpec spec;
    spec.arch = "llama";
    GgufWriter w = make_test_model(spec);
    std::vector<std::byte> bytes = w.to_bytes();
    // Rename the architecture in place: "llama" -> "mamba" (same length).
    const std::string from = "llama", to = "mamba";
    for (size_t i = 0; i + from.size() <= bytes.size(); ++i)
        if (std::memcmp(bytes.data() + i, from.data(), from.size()) == 0)
            std::memcpy(bytes.data() + i, to.data(), to.size());
    const auto path = test::unique_temp_path("mamba.gguf");
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    cpu::CpuBackend be(1);
    try {
        Model::load(path, be);
        FAIL() << "expected UnsupportedError";
    } catch (const UnsupportedError& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("'mamba'"), std::string::npos) << msg;
        EXPECT_NE(msg.find("llama, qwen2, qwen3, gemma3"), std::string::npos) << msg;
    }
}

TEST(EngineBadInput, HugeContextIsAClearAllocationError) {
    const auto path = write_model(TestModelSpec{}, "huge_ctx");
    cpu::CpuBackend be(1);
    auto model = Model::load(path, be);
    try {
        model->create_kv(int64_t(1) << 40, 1, KvType::F32);
        FAIL() << "expected an allocation error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("cannot allocate"), std::string::npos) << e.what();
    }
    EXPECT_NO_THROW(model->create_kv(16, 1, KvType::F16));
}

}  // namespace
}  // namespace fluoro

namespace fluoro {
namespace {

TEST(EngineBadInput, ModelFileChangedOnDiskIsDetected) {
    const auto path = test::unique_temp_path("changing.gguf");
    gguf::write_test_model(path, gguf::TestModelSpec{});
    cpu::CpuBackend be(1);
    auto model = Model::load(path, be);
    auto kv = model->create_kv(16, 1, KvType::F16);
    Sequence seq(*model, *kv, 0);
    EXPECT_NO_THROW(seq.prefill(std::vector<int32_t>{1, 2}));
    // Replaced by a new file under the same name: our mapping keeps the old one; still usable.
    const auto tmp = test::unique_temp_path("changing.new");
    gguf::write_test_model(tmp, gguf::TestModelSpec{});
    std::filesystem::rename(tmp, path);
    EXPECT_NO_THROW(seq.prefill(std::vector<int32_t>{1, 2, 3}));
    EXPECT_TRUE(model->file().check_unchanged_on_disk());
    // Truncated in place: reading it could fault, so the next request is refused clearly.
    auto model2 = Model::load(path, be);
    auto kv2 = model2->create_kv(16, 1, KvType::F16);
    Sequence seq2(*model2, *kv2, 0);
    std::filesystem::resize_file(path, 100);
    try {
        seq2.prefill(std::vector<int32_t>{1, 2});
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("modified on disk"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace fluoro
