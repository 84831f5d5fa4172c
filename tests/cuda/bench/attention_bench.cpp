// Attention kernel timings (backend/cuda/cuda_attention.h) for the two model shapes: decode
// (one query row at contexts 1k..32k, with the effective KV read bandwidth) and prefill (n_tok =
// ctx rows of one sequence). Medians of CUDA-event-timed runs after warm-up. Exit 3 without a
// usable GPU.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <numeric>
#include <random>
#include <vector>

#include "backend/cuda/cuda_attention.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device.h"
#include "backend/cuda/device_buffer.h"

namespace {

using fluoro::cuda::Attention;
using fluoro::cuda::AttnBatchDev;
using fluoro::cuda::AttnShape;
using fluoro::cuda::DeviceBuffer;
using fluoro::cuda::KvElem;
using fluoro::cuda::KvLayerDev;

constexpr int kWarmup = 3;
constexpr int kRuns = 21;
constexpr int kBlockTokens = 16;
constexpr int kMaxCtx = 32768;

struct Model {
    const char* name;
    int n_head, n_head_kv, head_dim;
};

template <typename T>
DeviceBuffer<T> upload(const std::vector<T>& host) {
    DeviceBuffer<T> d(host.size());
    d.copy_from_host(host);
    return d;
}

class Bench {
  public:
    explicit Bench(const Model& m) : m_(m) {
        const int64_t row = int64_t(m.n_head_kv) * m.head_dim * 2;  // f16
        kpool_ = DeviceBuffer<std::byte>(size_t(int64_t(kMaxCtx) * row));
        vpool_ = DeviceBuffer<std::byte>(size_t(int64_t(kMaxCtx) * row));
        // 0x2C2C as f16 is about 0.065: finite, values do not matter for timing.
        FLUORO_CUDA_CHECK(cudaMemset(kpool_.data(), 0x2C, kpool_.bytes()));
        FLUORO_CUDA_CHECK(cudaMemset(vpool_.data(), 0x2C, vpool_.bytes()));
        std::vector<int32_t> table(static_cast<size_t>(kMaxCtx / kBlockTokens));
        std::iota(table.begin(), table.end(), 0);
        std::mt19937 rng(7);
        std::shuffle(table.begin(), table.end(), rng);
        table_ = upload(table);
        layer_.k = kpool_.data();
        layer_.v = vpool_.data();
        layer_.k_row_bytes = layer_.v_row_bytes = size_t(row);
        layer_.elem = KvElem::F16;
        shape_.n_head = m.n_head;
        shape_.n_head_kv = m.n_head_kv;
        shape_.head_dim_k = shape_.head_dim_v = m.head_dim;
        shape_.scale = 0.125f;
        const int64_t max_tok = 8192;
        std::vector<float> q(static_cast<size_t>(max_tok * m.n_head * m.head_dim));
        std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
        for (auto& x : q) x = uni(rng);
        q_ = upload(q);
        out_ = DeviceBuffer<float>(size_t(max_tok * m.n_head * m.head_dim));
        lse_ = DeviceBuffer<float>(size_t(max_tok * m.n_head));
        attn_.reserve(max_tok, m.n_head, m.head_dim, kMaxCtx);
        FLUORO_CUDA_CHECK(cudaStreamCreate(&stream_));
        FLUORO_CUDA_CHECK(cudaEventCreate(&start_));
        FLUORO_CUDA_CHECK(cudaEventCreate(&stop_));
    }
    ~Bench() {
        cudaEventDestroy(start_);
        cudaEventDestroy(stop_);
        cudaStreamDestroy(stream_);
    }
    Bench(const Bench&) = delete;
    Bench& operator=(const Bench&) = delete;

    // Median milliseconds of run() for n_tok rows at positions ctx - n_tok .. ctx - 1.
    double time(int n_tok, int ctx) {
        std::vector<int32_t> pos(static_cast<size_t>(n_tok)), seq(static_cast<size_t>(n_tok), 0),
            slot(static_cast<size_t>(n_tok), 0);
        for (int t = 0; t < n_tok; ++t) pos[size_t(t)] = ctx - n_tok + t;
        const auto dpos = upload(pos), dseq = upload(seq), dslot = upload(slot);
        AttnBatchDev b;
        b.n_tok = n_tok;
        b.pos = dpos.data();
        b.seq = dseq.data();
        b.slot_row = dslot.data();
        b.tables = table_.data();
        b.table_pitch = kMaxCtx / kBlockTokens;
        b.block_tokens = kBlockTokens;
        b.max_pos = ctx - 1;
        b.same_seq_consecutive = true;
        std::vector<float> ms;
        for (int i = 0; i < kWarmup + kRuns; ++i) {
            FLUORO_CUDA_CHECK(cudaEventRecord(start_, stream_));
            attn_.run(shape_, layer_, b, q_.data(), out_.data(), lse_.data(), stream_);
            FLUORO_CUDA_CHECK(cudaEventRecord(stop_, stream_));
            FLUORO_CUDA_CHECK(cudaEventSynchronize(stop_));
            float t = 0.0f;
            FLUORO_CUDA_CHECK(cudaEventElapsedTime(&t, start_, stop_));
            if (i >= kWarmup) ms.push_back(double(t));
        }
        std::sort(ms.begin(), ms.end());
        return ms[ms.size() / 2];
    }

    const Model& model() const { return m_; }

  private:
    Model m_;
    DeviceBuffer<std::byte> kpool_, vpool_;
    DeviceBuffer<int32_t> table_;
    DeviceBuffer<float> q_, out_, lse_;
    KvLayerDev layer_;
    AttnShape shape_;
    Attention attn_;
    cudaStream_t stream_ = nullptr;
    cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

void run_model(const Model& m) {
    Bench bench(m);
    std::printf("\n%s: %d q heads, %d kv heads, head dim %d, f16 KV, block %d tokens\n", m.name,
                m.n_head, m.n_head_kv, m.head_dim, kBlockTokens);
    std::printf("  decode  %7s %10s %10s\n", "ctx", "us", "KV GB/s");
    for (const int ctx : {1024, 2048, 4096, 8192, 16384, 32768}) {
        const double ms = bench.time(1, ctx);
        const double bytes = double(ctx) * m.n_head_kv * m.head_dim * 2.0 * 2.0;  // K and V
        std::printf("  decode  %7d %10.1f %10.1f\n", ctx, ms * 1e3, bytes / (ms * 1e-3) / 1e9);
    }
    std::printf("  prefill %7s %10s %10s\n", "n_tok", "ms", "TFLOP/s");
    for (const int n : {512, 1024, 2048, 4096, 8192}) {
        const double ms = bench.time(n, n);
        // QK and PV over the causal triangle: 2 * 2 * head_dim flops per (row, key, head).
        const double flops = 4.0 * m.head_dim * m.n_head * (double(n) * (n + 1) / 2.0);
        std::printf("  prefill %7d %10.3f %10.2f\n", n, ms, flops / (ms * 1e-3) / 1e12);
    }
}

}  // namespace

int main() {
    const fluoro::cuda::DeviceStatus status = fluoro::cuda::probe_devices();
    if (!status.available) {
        std::printf("attention bench: no CUDA device: %s\n", status.reason.c_str());
        return 3;
    }
    std::printf("attention bench on %s (sm_%d%d), median of %d runs after %d warm-up\n",
                status.name.c_str(), status.cc_major, status.cc_minor, kRuns, kWarmup);
    try {
        run_model({"SmolLM2 (135M)", 9, 3, 64});
        run_model({"Gemma 3 270M (global layer)", 4, 1, 256});
    } catch (const std::exception& e) {
        std::printf("attention bench failed: %s\n", e.what());
        return 1;
    }
    return 0;
}
