// A model file whose values are nonsense, or that holds tensors the architecture never reads, is
// refused at load with an error naming the key or the tensor — never loaded to give garbage.
// Each case is a synthetic model (engine/gguf/test_model.h) with one thing wrong.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "gguf/gguf_file.h"
#include "gguf/test_model.h"
#include "model/model.h"
#include "test_temp.h"

namespace fluoro {
namespace {

// Loads the image and returns the load error's message ("" when it loaded).
std::string load_error(const std::vector<std::byte>& image, const std::string& tag) {
    const auto path = test::unique_temp_path("load_checks_" + tag + ".gguf");
    {
        FILE* f = std::fopen(path.c_str(), "wb");
        EXPECT_NE(f, nullptr);
        std::fwrite(image.data(), 1, image.size(), f);
        std::fclose(f);
    }
    cpu::CpuBackend backend(1);
    std::string what;
    try {
        Model::load(path, backend);
    } catch (const Error& e) {
        what = e.what();
    }
    std::filesystem::remove(path);
    return what;
}

std::vector<std::byte> image_of(const gguf::GgufWriter& w) {
    return w.to_bytes();
}

TEST(ModelLoadChecks, TheUnchangedTestModelsLoad) {
    for (const char* arch : {"llama", "qwen2", "qwen3", "gemma3", "granite", "phi3"}) {
        gguf::TestModelSpec spec;
        spec.arch = arch;
        EXPECT_EQ(load_error(image_of(gguf::make_test_model(spec)), arch), "") << arch;
    }
}

TEST(ModelLoadChecks, NonsenseRopeBaseIsRefusedNamingTheKey) {
    for (const float base : {std::numeric_limits<float>::quiet_NaN(), 0.0f, -1.0f,
                             std::numeric_limits<float>::infinity()}) {
        gguf::TestModelSpec spec;
        spec.rope_base = base;
        const std::string e = load_error(image_of(gguf::make_test_model(spec)), "rope");
        EXPECT_NE(e.find("llama.rope.freq_base"), std::string::npos) << base << ": " << e;
    }
}

TEST(ModelLoadChecks, NonsenseRmsEpsilonIsRefusedNamingTheKey) {
    for (const float eps : {std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(), 0.0f, -1e-5f, 2.0f}) {
        gguf::TestModelSpec spec;
        spec.rms_eps = eps;
        const std::string e = load_error(image_of(gguf::make_test_model(spec)), "eps");
        EXPECT_NE(e.find("llama.attention.layer_norm_rms_epsilon"), std::string::npos)
            << eps << ": " << e;
    }
}

TEST(ModelLoadChecks, NonsenseRopeScalingFactorIsRefused) {
    gguf::TestModelSpec spec;
    gguf::GgufWriter w = gguf::make_test_model(spec);
    w.add_f32("llama.rope.scaling.factor", std::numeric_limits<float>::quiet_NaN());
    const std::string e = load_error(image_of(w), "factor");
    EXPECT_NE(e.find("llama.rope.scaling.factor"), std::string::npos) << e;
}

// The decoders here give V heads the size of K heads (the V projection, buffers and attention):
// a value_length that differs was read, ignored in binding, and overflowed the attention's
// buffers at the first forward step (found by tests/fuzz/model_fuzz.cpp). Now refused, naming it.
TEST(ModelLoadChecks, AValueHeadSizeOtherThanTheKeyHeadSizeIsRefused) {
    for (const char* arch : {"llama", "qwen2", "gemma3"}) {
        gguf::TestModelSpec spec;
        spec.arch = arch;
        spec.value_length = spec.n_embd / spec.n_head * 2;
        const std::string e = load_error(image_of(gguf::make_test_model(spec)), arch);
        EXPECT_NE(e.find(std::string(arch) + ".attention.value_length"), std::string::npos)
            << arch << ": " << e;
        spec.value_length = spec.n_embd / spec.n_head;  // written, and equal: loads
        EXPECT_EQ(load_error(image_of(gguf::make_test_model(spec)), arch), "") << arch;
    }
}

TEST(ModelLoadChecks, RopeScalingThisEngineDoesNotApplyIsRefused) {
    for (const char* kind : {"llama3", "longrope", "su"}) {
        gguf::TestModelSpec spec;
        gguf::GgufWriter w = gguf::make_test_model(spec);
        w.add_string("llama.rope.scaling.type", kind);
        const std::string e = load_error(image_of(w), kind);
        EXPECT_NE(e.find("llama.rope.scaling.type"), std::string::npos) << e;
        EXPECT_NE(e.find(kind), std::string::npos) << e;
        EXPECT_NE(e.find("load_checks_"), std::string::npos) << "names the file: " << e;
    }
    for (const char* kind : {"linear", "yarn", "none"}) {  // applied: they load
        gguf::TestModelSpec spec;
        gguf::GgufWriter w = gguf::make_test_model(spec);
        w.add_string("llama.rope.scaling.type", kind);
        w.add_f32("llama.rope.scaling.factor", 2.0f);
        EXPECT_EQ(load_error(image_of(w), kind), "") << kind;
    }
}

// yarn_attn_factor is implemented nowhere; yarn_log_multiplier is mistral3's only (llama.cpp
// reads it for no other architecture).
TEST(ModelLoadChecks, YarnKeysThisEngineDoesNotImplementAreRefusedNamingThem) {
    for (const char* key :
         {"llama.rope.scaling.yarn_attn_factor", "llama.rope.scaling.yarn_log_multiplier"}) {
        gguf::TestModelSpec spec;
        gguf::GgufWriter w = gguf::make_test_model(spec);
        w.add_string("llama.rope.scaling.type", "yarn");
        w.add_f32("llama.rope.scaling.factor", 4.0f);
        w.add_f32(key, 0.5f);
        const std::string e = load_error(image_of(w), "yarn_key");
        EXPECT_NE(e.find(key), std::string::npos) << e;
    }
    gguf::TestModelSpec spec;  // YaRN's parameters without YaRN: the file contradicts itself
    gguf::GgufWriter w = gguf::make_test_model(spec);
    w.add_f32("llama.rope.scaling.yarn_beta_fast", 16.0f);
    const std::string e = load_error(image_of(w), "beta_no_yarn");
    EXPECT_NE(e.find("llama.rope.scaling.yarn_beta_fast"), std::string::npos) << e;
    gguf::GgufWriter y = gguf::make_test_model(spec);  // yarn without its factor
    y.add_string("llama.rope.scaling.type", "yarn");
    EXPECT_NE(load_error(image_of(y), "yarn_nofactor").find("llama.rope.scaling.factor"),
              std::string::npos);
}

// Every <arch>.* key must be understood: one that could change the math (a Granite multiplier,
// a sliding window on a llama) is refused, naming the key and the file, never ignored.
TEST(ModelLoadChecks, AMetadataKeyTheArchitectureDoesNotUnderstandIsRefusedNamingIt) {
    const struct {
        const char* arch;
        const char* key;
    } cases[] = {{"llama", "llama.attention.sliding_window"},
                 {"llama", "llama.embedding_scale"},
                 {"qwen2", "qwen2.rope.freq_base_swa"},
                 {"qwen3", "qwen3.attention.scale"},
                 {"gemma3", "gemma3.logit_scale"}};
    for (const auto& c : cases) {
        gguf::TestModelSpec spec;
        spec.arch = c.arch;
        gguf::GgufWriter w = gguf::make_test_model(spec);
        w.add_f32(c.key, 2.0f);
        const std::string e = load_error(image_of(w), "unknown_key");
        EXPECT_NE(e.find(std::string("'") + c.key + "'"), std::string::npos) << e;
        EXPECT_NE(e.find("load_checks_unknown_key"), std::string::npos) << "names the file: " << e;
    }
    // Keys that leave the math unchanged, or a dense model's expert_count of 0, load.
    gguf::TestModelSpec spec;
    gguf::GgufWriter w = gguf::make_test_model(spec);
    w.add_bool("llama.rope.scaling.finetuned", false);
    w.add_u32("llama.expert_count", 0);
    w.add_u32("llama.expert_used_count", 0);
    EXPECT_EQ(load_error(image_of(w), "harmless_keys"), "");
    // A dense family (qwen3) with experts is refused naming the key; a llama with experts is
    // Mixtral-style and then needs its router and stacked experts, named when missing.
    gguf::TestModelSpec qwen3;
    qwen3.arch = "qwen3";
    gguf::GgufWriter dense = gguf::make_test_model(qwen3);
    dense.add_u32("qwen3.expert_count", 8);
    dense.add_u32("qwen3.expert_used_count", 2);
    EXPECT_NE(load_error(image_of(dense), "dense_moe").find("'qwen3.expert_count'"),
              std::string::npos);
    gguf::GgufWriter moe = gguf::make_test_model(spec);
    moe.add_u32("llama.expert_count", 8);
    moe.add_u32("llama.expert_used_count", 2);
    EXPECT_NE(load_error(image_of(moe), "moe").find("'blk.0.ffn_gate_inp.weight' is missing"),
              std::string::npos);
    gguf::GgufWriter no_k = gguf::make_test_model(spec);
    no_k.add_u32("llama.expert_count", 8);
    EXPECT_NE(load_error(image_of(no_k), "moe_no_k").find("'llama.expert_used_count'"),
              std::string::npos);
    gguf::GgufWriter too_many = gguf::make_test_model(spec);
    too_many.add_u32("llama.expert_count", 8);
    too_many.add_u32("llama.expert_used_count", 9);
    EXPECT_NE(load_error(image_of(too_many), "moe_k").find("exceeds expert_count"),
              std::string::npos);
}

// mistral3's attention temperature is mistral3's only (a llama refuses the key), must not be
// negative, and Ministral 3's YaRN log multiplier is refused naming the key; a plain mistral3
// and smollm3 file (the llama tensors) load.
TEST(ModelLoadChecks, Mistral3TemperatureIsMistral3sOnlyAndChecked) {
    for (const char* arch : {"mistral3", "smollm3"}) {
        gguf::TestModelSpec spec;
        spec.arch = arch;
        EXPECT_EQ(load_error(image_of(gguf::make_test_model(spec)), "plain"), "") << arch;
    }
    gguf::TestModelSpec llama;
    gguf::GgufWriter l = gguf::make_test_model(llama);
    l.add_f32("llama.attention.temperature_scale", 0.1f);
    EXPECT_NE(load_error(image_of(l), "llama_temp").find("'llama.attention.temperature_scale'"),
              std::string::npos);
    gguf::TestModelSpec spec;
    spec.arch = "mistral3";
    gguf::GgufWriter neg = gguf::make_test_model(spec);
    neg.add_f32("mistral3.attention.temperature_scale", -0.1f);
    EXPECT_NE(load_error(image_of(neg), "neg_temp").find("'mistral3.attention.temperature_scale'"),
              std::string::npos);
    gguf::GgufWriter ok = gguf::make_test_model(spec);
    ok.add_f32("mistral3.attention.temperature_scale", 0.1f);
    EXPECT_EQ(load_error(image_of(ok), "temp"), "");
    // Ministral 3's YaRN log multiplier opens (its effect: ArchLlamaCpp.Mistral3*); a negative
    // one, or one without YaRN, is refused naming it.
    gguf::GgufWriter log_mul = gguf::make_test_model(spec);
    log_mul.add_string("mistral3.rope.scaling.type", "yarn");
    log_mul.add_f32("mistral3.rope.scaling.factor", 16.0f);
    log_mul.add_f32("mistral3.rope.scaling.yarn_log_multiplier", 1.0f);
    EXPECT_EQ(load_error(image_of(log_mul), "log_mul"), "");
    gguf::GgufWriter bad_mul = gguf::make_test_model(spec);
    bad_mul.add_string("mistral3.rope.scaling.type", "yarn");
    bad_mul.add_f32("mistral3.rope.scaling.factor", 16.0f);
    bad_mul.add_f32("mistral3.rope.scaling.yarn_log_multiplier", -1.0f);
    EXPECT_NE(load_error(image_of(bad_mul), "bad_mul")
                  .find("'mistral3.rope.scaling.yarn_log_multiplier'"),
              std::string::npos);
    gguf::GgufWriter no_yarn = gguf::make_test_model(spec);
    no_yarn.add_f32("mistral3.rope.scaling.yarn_log_multiplier", 1.0f);
    EXPECT_NE(load_error(image_of(no_yarn), "mul_no_yarn")
                  .find("'mistral3.rope.scaling.yarn_log_multiplier'"),
              std::string::npos);
}

// Granite 4's layers without RoPE are not implemented: refused naming the key and the file.
// Granite's multipliers are granite's only: on a llama they are unknown keys.
TEST(ModelLoadChecks, GraniteWithoutRopeIsRefusedAndItsMultipliersAreGranitesOnly) {
    gguf::TestModelSpec spec;
    spec.arch = "granite";
    gguf::GgufWriter w = gguf::make_test_model(spec);
    w.add_bool("granite.rope.scaling.finetuned", false);
    const std::string e = load_error(image_of(w), "granite_nope");
    EXPECT_NE(e.find("'granite.rope.scaling.finetuned'"), std::string::npos) << e;
    EXPECT_NE(e.find("load_checks_granite_nope"), std::string::npos) << e;
    gguf::GgufWriter g = gguf::make_test_model(spec);
    for (const char* k : {"granite.embedding_scale", "granite.residual_scale",
                          "granite.attention.scale", "granite.logit_scale"})
        g.add_f32(k, 0.5f);
    EXPECT_EQ(load_error(image_of(g), "granite_scales"), "");
    gguf::TestModelSpec llama;
    gguf::GgufWriter l = gguf::make_test_model(llama);
    l.add_f32("llama.residual_scale", 0.5f);
    EXPECT_NE(load_error(image_of(l), "llama_residual").find("'llama.residual_scale'"),
              std::string::npos);
}

// llama reads rope_freqs (llama3 scaling); the qwen architectures do not (nor does llama.cpp),
// so there it is a tensor no lookup asked for: refused, naming it.
TEST(ModelLoadChecks, ATensorTheArchitectureNeverReadsIsRefusedNamingIt) {
    for (const char* arch : {"qwen2", "qwen3"}) {
        gguf::TestModelSpec spec;
        spec.arch = arch;
        gguf::GgufWriter w = gguf::make_test_model(spec);
        const std::vector<float> freqs(spec.n_embd / spec.n_head / 2, 1.0f);
        w.add_tensor_f32("rope_freqs.weight", {freqs.size()}, freqs);
        const std::string e = load_error(image_of(w), "rope_freqs");
        EXPECT_NE(e.find("'rope_freqs.weight'"), std::string::npos) << e;
    }
    gguf::TestModelSpec spec;  // q/k norms are qwen3's and gemma3's, not llama's
    gguf::GgufWriter w = gguf::make_test_model(spec);
    const std::vector<float> norm(spec.n_embd / spec.n_head, 1.0f);
    w.add_tensor_f32("blk.0.attn_q_norm.weight", {norm.size()}, norm);
    EXPECT_NE(load_error(image_of(w), "q_norm").find("'blk.0.attn_q_norm.weight'"),
              std::string::npos);
}

// phi3's LongRoPE factors (Phi-3-mini-128k, Phi-3.5-mini, Phi-4-mini) are not implemented: the
// file is refused naming the tensor and saying why. Without them, the stacked QKV splits into
// Q, K and V whatever the KV head count (GQA or not).
TEST(ModelLoadChecks, Phi3LongRopeIsRefusedAndStackedShapesAreChecked) {
    gguf::TestModelSpec spec;
    spec.arch = "phi3";
    for (const char* t : {"rope_factors_long.weight", "rope_factors_short.weight"}) {
        gguf::GgufWriter w = gguf::make_test_model(spec);
        const std::vector<float> factors(spec.n_embd / spec.n_head / 2, 1.0f);
        w.add_tensor_f32(t, {factors.size()}, factors);
        const std::string e = load_error(image_of(w), "phi3_longrope");
        EXPECT_NE(e.find(std::string("'") + t + "'"), std::string::npos) << e;
        EXPECT_NE(e.find("LongRoPE"), std::string::npos) << e;
    }
    spec.n_head_kv = 4;  // the file's head_count_kv says 4, its attn_qkv is built for 4: fine
    EXPECT_EQ(load_error(image_of(gguf::make_test_model(spec)), "phi3_mha"), "");
}

TEST(ModelLoadChecks, Llama3RopeFreqsLoadAndAreCheckedForShape) {
    gguf::TestModelSpec spec;
    const size_t half = spec.n_embd / spec.n_head / 2;
    {
        gguf::GgufWriter w = gguf::make_test_model(spec);
        const std::vector<float> freqs(half, 2.0f);
        w.add_tensor_f32("rope_freqs.weight", {freqs.size()}, freqs);
        EXPECT_EQ(load_error(image_of(w), "rope_freqs_ok"), "");
    }
    gguf::GgufWriter w = gguf::make_test_model(spec);
    const std::vector<float> freqs(half + 1, 2.0f);
    w.add_tensor_f32("rope_freqs.weight", {freqs.size()}, freqs);
    const std::string e = load_error(image_of(w), "rope_freqs_shape");
    EXPECT_NE(e.find("'rope_freqs.weight'"), std::string::npos) << e;
    EXPECT_NE(e.find("shape"), std::string::npos) << e;
}

// block_count 2 with a third layer's tensors in the file: that layer would be silently skipped.
TEST(ModelLoadChecks, ALayerPastBlockCountIsRefusedNamingTheLayer) {
    gguf::TestModelSpec spec;
    spec.n_layer = 2;
    gguf::GgufWriter w = gguf::make_test_model(spec);
    const std::vector<float> norm(spec.n_embd, 1.0f);
    w.add_tensor_f32("blk.2.attn_norm.weight", {norm.size()}, norm);
    const std::string e = load_error(image_of(w), "extra_layer");
    EXPECT_NE(e.find("'blk.2.attn_norm.weight'"), std::string::npos) << e;
    EXPECT_NE(e.find("block_count"), std::string::npos) << e;
}

TEST(ModelLoadChecks, ANonFiniteNormWeightIsRefusedNamingTheTensor) {
    for (const char* arch : {"llama", "gemma3"}) {
        gguf::TestModelSpec spec;
        spec.arch = arch;
        std::vector<std::byte> image = image_of(gguf::make_test_model(spec));
        // Find blk.1.ffn_norm.weight's bytes in the image (seeded random floats: unique) and
        // put a NaN in its middle.
        const gguf::GgufFile f = gguf::GgufFile::parse(image, "x.gguf");
        const gguf::TensorInfo* t = f.find_tensor("blk.1.ffn_norm.weight");
        ASSERT_NE(t, nullptr);
        const auto data = f.tensor_data(*t);
        const auto at = std::search(image.begin(), image.end(), data.begin(), data.end());
        ASSERT_NE(at, image.end());
        const float nan = std::numeric_limits<float>::quiet_NaN();
        std::memcpy(&*at + 5 * sizeof(float), &nan, sizeof nan);
        const std::string e = load_error(image, std::string("nan_norm_") + arch);
        EXPECT_NE(e.find("'blk.1.ffn_norm.weight'"), std::string::npos) << arch << ": " << e;
        EXPECT_NE(e.find("element 5"), std::string::npos) << e;
    }
}

}  // namespace
}  // namespace fluoro
