// Whole models on the CUDA backend against the CPU backend (the reference), on the same GGUF:
// prefill logits, decode logits step by step, greedy continuations, chunked prefill, attention
// capture, and a KV compaction (eviction) followed by decoding. Models: the entries of
// FLUORO_GPU_MODELS (colon-separated; scripts/gpu-check.sh passes slices of the default models
// when whole files cannot be copied to the GPU machine), else the default models in
// FLUORO_MODELS_DIR. Skipped without a GPU (failed with FLUORO_REQUIRE_CUDA=1).
//
// The CPU multiplies quantized weights by activations quantized to Q8 (as llama.cpp does), the
// GPU by f32 activations (decode) or f16 ones (prefill GEMM). On Gemma 3 that alone moves the
// logits by 12 % (normalized RMS; measured: CPU on a slice vs CPU on its dequantized copy), far
// more than any kernel bug would show above. So an entry may name the CPU's model apart:
// "model.gguf=reference.gguf", the reference being model.gguf with every quantized tensor
// dequantized to F32 (fluoro_gguf_reshape --dequantize; the same weight values). Then both
// sides compute quantized weights times unquantized activations and the tolerances are tight;
// without a reference they are loose. Measured values are printed so a drift shows early.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/cuda_backend.h"
#include "core/error.h"
#include "cuda/cuda_test_support.h"
#include "gguf/gguf_file.h"
#include "model/model.h"
#include "tensor/ggml_type.h"
#include "test_paths.h"

namespace fluoro::cuda {
namespace {

// rms(a - b) / rms(b) over one row.
double nrmse(std::span<const float> a, std::span<const float> b) {
    double num = 0, den = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        const double d = double(a[i]) - double(b[i]);
        num += d * d;
        den += double(b[i]) * double(b[i]);
    }
    return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

int64_t argmax(std::span<const float> row) {
    return int64_t(std::max_element(row.begin(), row.end()) - row.begin());
}

// One model to compare: the GPU loads `gpu`, the CPU `cpu` (the same file, or its dequantized
// copy).
struct ModelPair {
    std::filesystem::path gpu, cpu;
    bool dequantized_reference() const { return cpu != gpu; }
};

std::vector<ModelPair> model_files() {
    std::vector<ModelPair> out;
    if (const char* list = std::getenv("FLUORO_GPU_MODELS")) {
        std::string s = list;
        size_t at = 0;
        while (at <= s.size()) {
            const size_t end = std::min(s.find(':', at), s.size());
            if (end > at) {
                const std::string e = s.substr(at, end - at);
                const size_t eq = e.find('=');
                if (eq == std::string::npos)
                    out.push_back({e, e});
                else
                    out.push_back({e.substr(0, eq), e.substr(eq + 1)});
            }
            at = end + 1;
        }
        return out;
    }
    const char* dir = std::getenv("FLUORO_MODELS_DIR");
    const std::filesystem::path d = dir ? dir : FLUORO_MODELS_DIR;
    for (const char* f : {"SmolLM2-135M-Instruct.Q4_1.gguf", "gemma-3-270m-q4_k_m.gguf"})
        if (std::filesystem::exists(d / f)) out.push_back({d / f, d / f});
    return out;
}

// A fixed prompt of n ids: the tokenizer's reading of a text, padded with ids from it.
std::vector<int32_t> prompt_ids(const Model& m, int64_t n) {
    const std::string text =
        "The quick brown fox jumps over the lazy dog. In the beginning God created the heaven "
        "and the earth. And the earth was without form, and void; and darkness was upon the face "
        "of the deep. def fibonacci(n): return n if n < 2 else fibonacci(n - 1) + fibonacci(n - 2)";
    std::vector<int32_t> ids = m.tokenizer().encode(text, false, false);
    if (ids.empty()) ids.push_back(1);
    std::vector<int32_t> out;
    for (int64_t i = 0; i < n; ++i) out.push_back(ids[size_t(i) % ids.size()]);
    return out;
}

struct Side {
    std::unique_ptr<Backend> backend;
    std::unique_ptr<Model> model;
    std::unique_ptr<KvCache> kv;
};

Side load(const std::filesystem::path& path, bool cuda, int64_t logit_rows, int64_t ctx = 1024) {
    Side s;
    if (cuda)
        s.backend = std::make_unique<CudaBackend>(0);
    else
        s.backend = std::make_unique<cpu::CpuBackend>(0);
    ModelLoadOptions o;
    o.max_batch = 512;
    o.max_logit_rows = logit_rows;
    s.model = Model::load(path, *s.backend, o);
    s.kv = s.model->create_kv(ctx, 1, KvType::F16);
    return s;
}

// Runs tokens at positions p0.. of sequence 0 in chunks of `chunk`, returns the logits of the
// rows in `want` (indices into tokens) concatenated.
std::vector<float> run(Side& s, std::span<const int32_t> tokens, int64_t p0, int64_t chunk,
                       bool all_rows) {
    std::vector<float> out;
    const int64_t n = int64_t(tokens.size());
    for (int64_t at = 0; at < n; at += chunk) {
        const int64_t m = std::min(chunk, n - at);
        std::vector<int32_t> pos(static_cast<size_t>(m)), seq(static_cast<size_t>(m), 0), rows;
        std::iota(pos.begin(), pos.end(), int32_t(p0 + at));
        if (all_rows)
            for (int64_t i = 0; i < m; ++i) rows.push_back(int32_t(i));
        else if (at + m == n)
            rows.push_back(int32_t(m - 1));
        Batch b;
        b.tokens = tokens.subspan(size_t(at), size_t(m));
        b.positions = pos;
        b.seq_ids = seq;
        b.logit_rows = rows;
        const std::span<const float> l = s.model->forward(b, *s.kv);
        out.insert(out.end(), l.begin(), l.end());
        s.kv->set_length(0, p0 + at + m);
    }
    return out;
}

class CudaModelTest : public test::CudaTest<::testing::TestWithParam<int>> {
  protected:
    void SetUp() override {
        test::CudaTest<::testing::TestWithParam<int>>::SetUp();
        if (IsSkipped() || HasFatalFailure()) return;
        files_ = model_files();
        if (files_.empty()) {
            if (test::cuda_required()) FAIL() << "no model files (set FLUORO_GPU_MODELS)";
            GTEST_SKIP() << "no model files";
        }
        if (size_t(GetParam()) >= files_.size()) GTEST_SKIP() << "fewer model files";
        const ModelPair& p = files_[size_t(GetParam())];
        path_ = p.gpu;
        cpu_path_ = p.cpu;
        // Normalized RMS error of logits, CPU vs CUDA. Against a dequantized reference only f16
        // rounding (prefill GEMM, KV) and summation order differ.
        tol_ = p.dequantized_reference() ? 0.01 : 0.15;
        std::cout << path_.filename() << ": CPU reference " << cpu_path_.filename() << '\n';
    }
    Side load_cpu(int64_t logit_rows, int64_t ctx = 1024) const {
        return load(cpu_path_, false, logit_rows, ctx);
    }
    Side load_gpu(int64_t logit_rows, int64_t ctx = 1024) const {
        return load(path_, true, logit_rows, ctx);
    }
    std::vector<ModelPair> files_;
    std::filesystem::path path_, cpu_path_;
    double tol_ = 0.01;
};

TEST_P(CudaModelTest, PrefillLogitsMatchCpu) {
    const int64_t n = 96;
    Side cpu = load_cpu(n), gpu = load_gpu(n);
    const std::vector<int32_t> ids = prompt_ids(*cpu.model, n);
    const std::vector<float> a = run(cpu, ids, 0, 512, true), b = run(gpu, ids, 0, 512, true);
    ASSERT_EQ(a.size(), b.size());
    const size_t nv = size_t(cpu.model->n_vocab());
    double worst = 0;
    int64_t agree = 0;
    for (int64_t r = 0; r < n; ++r) {
        const std::span<const float> ra(a.data() + size_t(r) * nv, nv),
            rb(b.data() + size_t(r) * nv, nv);
        for (float x : rb) ASSERT_TRUE(std::isfinite(x)) << "row " << r;
        worst = std::max(worst, nrmse(rb, ra));
        agree += argmax(ra) == argmax(rb) ? 1 : 0;
    }
    std::cout << path_.filename() << ": prefill " << n << " rows, worst nrmse " << worst
              << ", argmax agrees on " << agree << "/" << n << '\n';
    EXPECT_LE(worst, tol_);
    EXPECT_GE(agree, n * 9 / 10);
}

TEST_P(CudaModelTest, DecodeLogitsMatchCpuStepByStep) {
    Side cpu = load_cpu(1), gpu = load_gpu(1);
    const std::vector<int32_t> ids = prompt_ids(*cpu.model, 40);
    std::vector<float> a = run(cpu, ids, 0, 512, false), b = run(gpu, ids, 0, 512, false);
    const size_t nv = size_t(cpu.model->n_vocab());
    double worst = nrmse(b, a);
    int64_t pos = int64_t(ids.size()), agree = 0, same_greedy = 0;
    bool diverged = false;
    const int64_t steps = 48;
    int32_t next_gpu = int32_t(argmax(b));
    for (int64_t s = 0; s < steps; ++s) {
        // Both decode the CPU's greedy token (teacher forcing), so errors do not compound.
        const int32_t next = int32_t(argmax(a));
        agree += next == next_gpu ? 1 : 0;
        if (!diverged && next == next_gpu)
            ++same_greedy;
        else
            diverged = true;
        const std::vector<int32_t> one{next};
        a = run(cpu, one, pos, 1, false);
        b = run(gpu, one, pos, 1, false);
        ASSERT_EQ(a.size(), nv);
        worst = std::max(worst, nrmse(b, a));
        next_gpu = int32_t(argmax(b));
        ++pos;
    }
    std::cout << path_.filename() << ": decode " << steps << " steps, worst nrmse " << worst
              << ", argmax agrees " << agree << "/" << steps << ", greedy identical for "
              << same_greedy << " tokens\n";
    EXPECT_LE(worst, tol_);
    EXPECT_GE(agree, steps * 9 / 10);
}

TEST_P(CudaModelTest, ChunkedPrefillMatchesWholePrefill) {
    const int64_t n = 200;
    Side whole = load_gpu(1), chunked = load_gpu(1);
    const std::vector<int32_t> ids = prompt_ids(*whole.model, n);
    const std::vector<float> a = run(whole, ids, 0, 512, false);
    // Chunks of 7 (GEMM) and 3 (GEMV kernels): the cache holds the same keys either way.
    const std::vector<float> b = run(chunked, ids, 0, 7, false);
    Side small = load_gpu(1);
    const std::vector<float> c = run(small, ids, 0, 3, false);
    const double e1 = nrmse(b, a), e2 = nrmse(c, a);
    std::cout << path_.filename() << ": chunked prefill nrmse " << e1 << " (7), " << e2 << " (3)\n";
    EXPECT_LE(e1, 0.02);
    EXPECT_LE(e2, 0.02);
    EXPECT_EQ(argmax(a), argmax(b));
}

TEST_P(CudaModelTest, LongContextDecodeMatchesCpu) {
    // 1500 cached tokens: the decode kernel splits the key range (and Gemma's local layers
    // see only their window).
    const int64_t n = 1500;
    Side cpu = load_cpu(1, 2048), gpu = load_gpu(1, 2048);
    const std::vector<int32_t> ids = prompt_ids(*cpu.model, n);
    const std::vector<float> a = run(cpu, ids, 0, 512, false), b = run(gpu, ids, 0, 512, false);
    const std::vector<int32_t> one{ids[5]};
    const std::vector<float> a2 = run(cpu, one, n, 1, false), b2 = run(gpu, one, n, 1, false);
    const double e1 = nrmse(b, a), e2 = nrmse(b2, a2);
    std::cout << path_.filename() << ": 1500-token prefill nrmse " << e1 << ", decode after it "
              << e2 << '\n';
    EXPECT_LE(e1, tol_);
    EXPECT_LE(e2, tol_);
}

TEST_P(CudaModelTest, CompactionThenDecodeMatchesCpu) {
    // An eviction (keep the first 4 and the last 40 of 100 slots), keys re-rotated, then decode:
    // exercises device row moves and rope_shift_kv against the CPU's.
    Side cpu = load_cpu(1), gpu = load_gpu(1);
    const std::vector<int32_t> ids = prompt_ids(*cpu.model, 100);
    run(cpu, ids, 0, 512, false);
    run(gpu, ids, 0, 512, false);
    std::vector<int64_t> keep{0, 1, 2, 3};
    for (int64_t i = 60; i < 100; ++i) keep.push_back(i);
    cpu.model->compact_kv(*cpu.kv, 0, keep);
    gpu.model->compact_kv(*gpu.kv, 0, keep);
    ASSERT_EQ(gpu.kv->length(0), 44);
    const std::vector<int32_t> next{ids[7], ids[8], ids[9]};
    const std::vector<float> a = run(cpu, next, 44, 1, false), b = run(gpu, next, 44, 1, false);
    const double e = nrmse(b, a);
    std::cout << path_.filename() << ": decode after compaction nrmse " << e << '\n';
    EXPECT_LE(e, tol_);
}

TEST_P(CudaModelTest, CapturedAttentionMatchesCpu) {
    Side cpu = load_cpu(1), gpu = load_gpu(1);
    AttentionCapture cc, gc;
    AttentionCaptureRegion r;
    r.layer = 1;
    r.head = -1;
    r.rows = 2;
    cc.regions = gc.regions = {r};
    cc.stats = gc.stats = true;
    cpu.backend->set_attention_capture(&cc);
    gpu.backend->set_attention_capture(&gc);
    const std::vector<int32_t> ids = prompt_ids(*cpu.model, 60);
    run(cpu, ids, 0, 512, false);
    run(gpu, ids, 0, 512, false);
    ASSERT_EQ(cc.rows.size(), gc.rows.size());
    ASSERT_FALSE(gc.rows.empty());
    double worst = 0;
    for (size_t i = 0; i < cc.rows.size(); ++i) {
        const CapturedAttentionRow &x = cc.rows[i], &y = gc.rows[i];
        ASSERT_EQ(x.layer, y.layer);
        ASSERT_EQ(x.head, y.head);
        ASSERT_EQ(x.pos, y.pos);
        ASSERT_EQ(x.weights.size(), y.weights.size());
        double sum = 0;
        for (size_t j = 0; j < x.weights.size(); ++j) {
            worst = std::max(worst, double(std::fabs(x.weights[j] - y.weights[j])));
            sum += y.weights[j];
        }
        EXPECT_NEAR(sum, 1.0, 1e-3) << "row " << i;
    }
    ASSERT_EQ(cc.sparsity.size(), gc.sparsity.size());
    for (size_t i = 0; i < cc.sparsity.size(); ++i) {
        ASSERT_EQ(cc.sparsity[i].heads.size(), gc.sparsity[i].heads.size());
        EXPECT_EQ(cc.sparsity[i].n_keys, gc.sparsity[i].n_keys);
        for (size_t h = 0; h < cc.sparsity[i].heads.size(); ++h)
            EXPECT_NEAR(cc.sparsity[i].heads[h].sink_mass, gc.sparsity[i].heads[h].sink_mass, 0.02)
                << "layer " << cc.sparsity[i].layer << " head " << h;
    }
    const std::span<const float> ks = gpu.backend->attention_key_scores(1, 0, 0);
    EXPECT_FALSE(ks.empty());
    std::cout << path_.filename() << ": captured " << gc.rows.size()
              << " rows, worst |p_cpu - p_gpu| " << worst << '\n';
    EXPECT_LE(worst, tol_ < 0.05 ? 0.01 : 0.05);
    cpu.backend->set_attention_capture(nullptr);
    gpu.backend->set_attention_capture(nullptr);
}

INSTANTIATE_TEST_SUITE_P(Models, CudaModelTest, ::testing::Values(0, 1, 2, 3));

// The architectures, RoPE scalings and quant types beyond the default models (tests/reference/
// fixtures/{arch,quant}_*.gguf, checked against llama.cpp on the CPU by arch_llamacpp_test.cpp
// and quant_types_llamacpp_test.cpp): llama3's rope_freqs, linear and YaRN scaling, qwen2's
// biases, qwen3's Q/K norms, granite's multipliers, olmo2's post-norms, phi3's split fused
// weights and partial rotary, gemma2's soft-capping and alternating window, smollm3's layers
// without RoPE, mistral3's YaRN attention factor, the mixtures' routing (qwen3moe, mixtral, olmoe,
// gpt-oss with sinks, swiglu_oai and expert biases), MXFP4 and IQ4_XS weights — on the GPU
// against the CPU: prefill at positions past the original contexts, then an eviction whose key
// re-rotation (rope_shift_kv) uses the same scaled angles, then decode.
//
// Fixtures come from FLUORO_GPU_FIXTURES (a folder; the device machine's copy of the repository
// lies elsewhere than the build's FLUORO_FIXTURES_DIR) or FLUORO_FIXTURES_DIR. Where that folder
// holds NAME-f32.gguf (fluoro_gguf_reshape --dequantize; scripts/gpu-bundle.sh's run.sh makes
// them), the CPU runs it: then neither side quantizes activations and the bound is 0.01 as for
// F16 weights (f16 rounding of prefill GEMM inputs and the KV, summation order). Without it, a
// file with block-quantized weights is also apart by the CPU's Q8 activation quantization: 0.15,
// CudaModelTest's bound for the same case.
std::filesystem::path fixtures_dir() {
    const char* env = std::getenv("FLUORO_GPU_FIXTURES");
    return env != nullptr && *env != '\0' ? std::filesystem::path(env)
                                          : std::filesystem::path(FLUORO_FIXTURES_DIR);
}

bool has_block_quantized_weights(const std::filesystem::path& path) {
    const gguf::GgufFile f = gguf::GgufFile::open(path);
    return std::any_of(f.tensors().begin(), f.tensors().end(), [](const gguf::TensorInfo& t) {
        return type_traits(t.type).block_elems > 1;
    });
}

class CudaArchFixtureTest : public test::CudaTest<::testing::TestWithParam<const char*>> {};

TEST_P(CudaArchFixtureTest, ModelsMatchCpu) {
    const std::string name = GetParam();
    const std::filesystem::path path = fixtures_dir() / (name + ".gguf");
    const std::filesystem::path ref = fixtures_dir() / (name + "-f32.gguf");
    const bool dequantized = std::filesystem::exists(ref);
    const double tol = dequantized || !has_block_quantized_weights(path) ? 0.01 : 0.15;
    Side cpu = load(dequantized ? ref : path, false, 64, 512), gpu = load(path, true, 64, 512);
    std::vector<int32_t> ids;
    for (int32_t i = 0; i < 200; ++i) ids.push_back(3 + (i * 37) % 250);
    const std::vector<float> a = run(cpu, ids, 0, 64, true), b = run(gpu, ids, 0, 64, true);
    const double e = nrmse(b, a);
    std::cout << name << (dequantized ? " (CPU on the dequantized copy)" : "") << ": prefill nrmse "
              << e << " (bound " << tol << ")\n";
    // The mixtures were added without a GPU run: a router near-tie resolved the other way by
    // f16 prefill activations would show as one row far off.
    EXPECT_LE(e, tol);
    std::vector<int64_t> keep{0, 1, 2, 3};
    for (int64_t i = 120; i < 200; ++i) keep.push_back(i);
    cpu.model->compact_kv(*cpu.kv, 0, keep);
    gpu.model->compact_kv(*gpu.kv, 0, keep);
    const std::vector<int32_t> next{ids[7], ids[8], ids[9]};
    const int64_t p0 = int64_t(keep.size());
    const double e2 = nrmse(run(gpu, next, p0, 1, false), run(cpu, next, p0, 1, false));
    std::cout << name << ": decode after compaction nrmse " << e2 << '\n';
    EXPECT_LE(e2, tol);
}

INSTANTIATE_TEST_SUITE_P(Arch, CudaArchFixtureTest,
                         ::testing::Values("arch_llama3", "arch_llama_linear", "arch_llama_yarn",
                                           "arch_qwen2", "arch_qwen3", "arch_granite", "arch_olmo2",
                                           "arch_phi3", "arch_gemma2", "arch_smollm3",
                                           "arch_mistral3", "arch_qwen3moe", "arch_mixtral",
                                           "arch_olmoe", "arch_gpt_oss", "arch_gpt_oss_mxfp4",
                                           "quant_mxfp4", "quant_iq4_xs"));

class CudaBackendErrors : public test::CudaTest<> {};

// A weight type the kernels do not cover is refused at load, naming the tensor and the type.
TEST_F(CudaBackendErrors, UncoveredQuantTypeIsRefusedNamingTheTensor) {
    CudaBackend be(0);
    ModelLoadOptions o;
    o.max_batch = 8;
    try {
        (void)Model::load(fixtures_dir() / "quant_iq3_s.gguf", be, o);
        FAIL() << "an IQ3_S model loaded on the GPU";
    } catch (const UnsupportedError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("iq3_s"), std::string::npos) << what;
        EXPECT_NE(what.find(".weight"), std::string::npos) << what;
    }
}

TEST_F(CudaBackendErrors, QuantizedKvIsRefusedWithAClearError) {
    CudaBackend be(0);
    KvShape s;
    s.n_layer = 1;
    s.n_head_kv = {1};
    s.head_dim_k = s.head_dim_v = 64;
    s.n_ctx = 16;
    s.type = KvType::Q8_0;
    try {
        (void)be.create_kv(s);
        FAIL() << "q8_0 KV accepted";
    } catch (const UnsupportedError& e) {
        EXPECT_NE(std::string(e.what()).find("q8_0"), std::string::npos) << e.what();
    }
}

TEST_F(CudaBackendErrors, HostCacheIsRefusedByAttention) {
    CudaBackend be(0);
    KvShape s;
    s.n_layer = 1;
    s.n_head_kv = {1};
    s.head_dim_k = s.head_dim_v = 64;
    s.n_ctx = 16;
    cpu::CpuBackend host(1);
    auto kv = host.create_kv(s);
    Act q = be.alloc_act(1, 64), k = be.alloc_act(1, 64), v = be.alloc_act(1, 64),
        o = be.alloc_act(1, 64);
    const std::vector<int32_t> tok{0}, pos{0}, seq{0};
    Batch b;
    b.tokens = tok;
    b.positions = pos;
    b.seq_ids = seq;
    AttentionParams p;
    p.n_head = p.n_head_kv = 1;
    p.head_dim_k = p.head_dim_v = 64;
    EXPECT_THROW(be.attention(p, q, k, v, b, *kv, o), Error);
}

}  // namespace
}  // namespace fluoro::cuda
