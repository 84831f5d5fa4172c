#include "backend/cuda/cuda_backend.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "backend/cpu/attention_split.h"
#include "backend/cuda/cuda_attention.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_clock.h"
#include "backend/cuda/cuda_matmul.h"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/device.h"
#include "backend/cuda/device_kv_memory.h"
#include "backend/cuda/int_uploads.h"
#include "core/error.h"
#include "gguf/gguf_file.h"
#include "kv/paged_kv.h"

namespace fluoro::cuda {
namespace {

[[noreturn]] void fail(const std::string& op, const std::string& what) {
    throw Error("cuda backend: " + op + ": " + what);
}

// The kernels' form of a RopeParams: angle constants from rope_coeffs (backend/rope.h, shared
// with the CPU backend), llama3's factors as a device pointer, checked here.
RopeArgs rope_args(const std::string& op, const RopeParams& p, bool magnitude = true) {
    RopeArgs a;
    a.n_rot = p.n_rot;
    if (p.n_rot > 0) a.coeffs = rope_coeffs(p, magnitude);
    a.neox = p.mode == RopeMode::Neox;
    if (p.freq_factors) {
        const Weight& f = *p.freq_factors;
        if (f.type != GgmlType::F32 || f.n_in() < p.n_rot / 2)
            fail(op, "frequency factors '" + f.name + "' must be at least " +
                         std::to_string(p.n_rot / 2) + " f32 values");
        a.factors = static_cast<const float*>(f.data);
    }
    return a;
}

std::string dims(const Act& a) {
    return std::to_string(a.rows) + " x " + std::to_string(a.width);
}

void require_same_shape(const Act& a, const Act& b, const char* op) {
    if (a.rows != b.rows || a.width != b.width)
        fail(op, "shapes differ (" + dims(a) + " and " + dims(b) + ")");
}

// The device paged cache behind `kv`, or an Error: the CUDA kernels read device rows only.
PagedKvCache& device_cache(KvCache& kv, const char* op) {
    auto* paged = dynamic_cast<PagedKvCache*>(&kv);
    if (paged == nullptr || paged->memory().host_visible())
        fail(op,
             "the KV cache was not created by the CUDA backend (its rows are not in device "
             "memory)");
    return *paged;
}

AttnShape attn_shape(const AttentionParams& p) {
    AttnShape sh;
    sh.n_head = p.n_head;
    sh.n_head_kv = p.n_head_kv;
    sh.head_dim_k = p.head_dim_k;
    sh.head_dim_v = p.head_dim_v;
    sh.scale = p.scale;
    sh.window = p.window;
    sh.softcap = p.softcap;
    return sh;
}

KvLayerDev layer_dev(const PagedKvCache& kv, int64_t layer) {
    const PagedKvCache::LayerStorage s = kv.layer_storage(layer);
    return {s.k, s.v, s.k_row_bytes, s.v_row_bytes,
            kv.shape().type.k == KvType::F16 ? KvElem::F16 : KvElem::F32};  // k == v here
}

// Sparsity of one probability row p over keys first .. first + n - 1 (as the CPU readout).
HeadSparsity sparsity_of(std::span<const float> p, int64_t first, int32_t top_k, float threshold) {
    constexpr int64_t kSinkKeys = 4;
    HeadSparsity h;
    const int64_t n = int64_t(p.size());
    double entropy = 0, sink = 0;
    int64_t below = 0;
    for (int64_t j = 0; j < n; ++j) {
        const double x = p[size_t(j)];
        if (x > 0) entropy -= x * std::log(x);
        below += p[size_t(j)] < threshold ? 1 : 0;
        if (first + j < kSinkKeys) sink += x;
    }
    std::vector<float> top(p.begin(), p.end());
    const auto k = std::min<int64_t>(std::max<int32_t>(top_k, 0), n);
    std::partial_sort(top.begin(), top.begin() + k, top.end(), std::greater<>());
    double mass = 0;
    for (int64_t i = 0; i < k; ++i) mass += top[size_t(i)];
    h.entropy = float(std::max(0.0, entropy));
    h.top_k_mass = float(mass);
    h.below_threshold = n > 0 ? float(double(below) / double(n)) : 0.0f;
    h.sink_mass = float(sink);
    return h;
}

}  // namespace

CudaBackend::CudaBackend(int device) : device_(device) {
    const DeviceStatus st = probe_devices();
    if (!st.available) throw Error("cuda backend: no usable GPU: " + st.reason);
    if (device < 0 || device >= st.device_count)
        throw Error("cuda backend: device " + std::to_string(device) + " does not exist (" +
                    std::to_string(st.device_count) + " found)");
    FLUORO_CUDA_CHECK(cudaSetDevice(device));
    cudaDeviceProp prop{};
    FLUORO_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    device_name_ = prop.name;
    FLUORO_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    matmul_ = std::make_unique<Matmul>(stream_);
    attn_ = std::make_unique<Attention>();
    uploads_ = std::make_unique<IntUploads>(stream_);
}

CudaBackend::~CudaBackend() {
    cudaStreamSynchronize(stream_);
    clock_.reset();
    uploads_.reset();
    attn_.reset();
    matmul_.reset();
    if (lse_ != nullptr) cudaFree(lse_);
    for (const DeviceAlloc& a : allocs_) cudaFree(a.ptr);
    cudaStreamDestroy(stream_);
}

size_t CudaBackend::device_bytes() const {
    size_t total = matmul_->scratch_bytes() + attn_->scratch_bytes();
    for (const DeviceAlloc& a : allocs_) total += a.bytes;
    return total;
}

size_t CudaBackend::attention_scratch_bytes() const {
    return attn_->scratch_bytes() + size_t(lse_capacity_) * sizeof(float);
}

void* CudaBackend::device_alloc(size_t bytes, const std::string& what) {
    void* p = nullptr;
    const cudaError_t err = cudaMalloc(&p, std::max<size_t>(bytes, 1));
    if (err != cudaSuccess) {
        cudaGetLastError();
        size_t free_b = 0, total_b = 0;
        cudaMemGetInfo(&free_b, &total_b);
        throw Error("cuda backend: cannot allocate " + std::to_string(bytes >> 20) + " MiB for " +
                    what + " on " + device_name_ + " (" + std::to_string(free_b >> 20) +
                    " MiB free of " + std::to_string(total_b >> 20) +
                    "): " + cudaGetErrorString(err));
    }
    allocs_.push_back({p, bytes});
    return p;
}

Weight CudaBackend::load_weight(const gguf::GgufFile& file, const gguf::TensorInfo& info) {
    if (!can_matmul(info.type))
        throw UnsupportedError("cuda backend: tensor " + info.name + " has type " +
                               std::string(type_name(info.type)) +
                               ", which the CUDA kernels do not cover");
    Weight w;
    w.name = info.name;
    w.type = info.type;
    for (size_t d = 0; d < 4; ++d) w.ne[d] = int64_t(info.ne[d]);
    w.row_bytes = size_t(*row_bytes(info.type, info.ne[0]));
    const std::span<const std::byte> bytes = file.tensor_data(info);
    void* d = device_alloc(bytes.size(), "tensor " + info.name);
    FLUORO_CUDA_CHECK(cudaMemcpy(d, bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
    w.data = d;
    return w;
}

std::unique_ptr<KvCache> CudaBackend::create_kv(const KvShape& shape) {
    if (!shape.type.same() || (shape.type.k != KvType::F16 && shape.type.k != KvType::F32))
        throw UnsupportedError("cuda backend: KV type " + kv_types_name(shape.type) +
                               " is not supported on the GPU yet; use f16 or f32, the same for "
                               "keys and values");
    KvShape s = shape;
    s.paged = true;  // the GPU kernels read through block tables only
    // ... and one table per sequence for every layer: the window-only storage of sliding-window
    // layers (a second pool and table) is CPU-only for now, so they store every token here.
    s.window_only = false;
    s.head_major = false;  // the kernels read token-major rows (layer_storage)
    // ... with values of their own: kv_store and the attention kernel read no values out of
    // the key rows yet (MLA's absorbed path caches its latent twice here).
    s.v_in_k = -1;
    key_scores_.clear();
    return std::make_unique<PagedKvCache>(std::move(s), device_kv_memory(stream_));
}

Act CudaBackend::alloc_act(int64_t rows, int64_t width) {
    if (rows < 0 || width < 0) fail("alloc_act", "negative shape");
    const size_t bytes = size_t(rows) * size_t(width) * sizeof(float);
    auto* p = static_cast<float*>(device_alloc(bytes, "activations"));
    FLUORO_CUDA_CHECK(cudaMemset(p, 0, std::max<size_t>(bytes, 1)));
    return Act{p, rows, width};
}

void CudaBackend::reserve(int64_t max_tokens, int64_t max_width) {
    max_tokens_ = std::max(max_tokens_, max_tokens);
    matmul_->reserve(max_tokens, max_width, 0);
}

void CudaBackend::get_rows(const Weight& table, std::span<const int32_t> ids, Act y) {
    if (int64_t(ids.size()) != y.rows || table.n_in() != y.width)
        fail("get_rows", "output " + dims(y) + " does not match " + std::to_string(ids.size()) +
                             " ids of a table with rows of " + std::to_string(table.n_in()));
    for (const int32_t id : ids)
        if (id < 0 || id >= table.n_out())
            fail("get_rows", "id " + std::to_string(id) + " is outside " + table.name + " (" +
                                 std::to_string(table.n_out()) + " rows)");
    if (ids.empty()) return;
    cuda::get_rows(table.type, table.data, table.row_bytes, table.n_in(), table.n_out(),
                   uploads_->get(ids), y.rows, y.data, stream_);
}

void CudaBackend::matmul(const Weight& w, const Act& x, Act y, OpCategory) {
    if (x.width != w.n_in() || y.width != w.n_out() || x.rows != y.rows)
        fail("matmul", w.name + " [" + std::to_string(w.n_out()) + " x " +
                           std::to_string(w.n_in()) + "] with input " + dims(x) + ", output " +
                           dims(y));
    if (x.rows == 0) return;
    matmul_->run(w.type, w.data, w.row_bytes, w.n_in(), w.n_out(), x.data, x.rows, y.data);
}

void CudaBackend::matmul_many(const Act& x, std::span<const MatmulOut> outs, OpCategory cat) {
    std::vector<cuda::Matmul::Output> list;
    list.reserve(outs.size());
    for (const MatmulOut& o : outs) {
        const Weight& w = *o.w;
        if (w.n_in() != x.width) return Backend::matmul_many(x, outs, cat);  // matmul() reports it
        if (o.y.width != w.n_out() || o.y.rows != x.rows)
            fail("matmul", w.name + " [" + std::to_string(w.n_out()) + " x " +
                               std::to_string(w.n_in()) + "] with input " + dims(x) + ", output " +
                               dims(o.y));
        list.push_back({w.type, w.data, w.row_bytes, w.n_out(), o.y.data});
    }
    if (x.rows == 0) return;
    matmul_->run_many(list, x.width, x.data, x.rows);
}

void CudaBackend::rope_qk(Act q, int64_t n_head_q, Act k, int64_t n_head_k, int64_t head_dim,
                          const RopeParams& p, std::span<const int32_t> positions) {
    const auto rows = int64_t(positions.size());
    if (q.width != n_head_q * head_dim || k.width != n_head_k * head_dim || q.rows != rows ||
        k.rows != rows)
        fail("rope", "queries " + dims(q) + " / keys " + dims(k) + " do not match " +
                         std::to_string(n_head_q) + " / " + std::to_string(n_head_k) + " heads x " +
                         std::to_string(head_dim) + " for " + std::to_string(rows) + " positions");
    if (rows == 0) return;
    cuda::rope_pair(q.data, n_head_q, k.data, n_head_k, rows, head_dim, rope_args("rope", p),
                    uploads_->get(positions), stream_);
}

void CudaBackend::add_rms_norm(Act x, const Act& y, const Weight& w, float eps, Act out) {
    require_same_shape(x, y, "add_rms_norm");
    require_same_shape(x, out, "add_rms_norm");
    if (w.n_in() != x.width) return Backend::add_rms_norm(x, y, w, eps, out);  // per-head groups
    cuda::add_rms_norm(x.data, y.data, x.rows, x.width, w.data, w.type, eps, out.data, stream_);
}

void CudaBackend::add_bias(Act y, const Weight& bias) {
    if (bias.n_in() != y.width)
        fail("add_bias", bias.name + " has " + std::to_string(bias.n_in()) +
                             " values for rows of " + std::to_string(y.width));
    cuda::add_bias(y.data, y.rows, y.width, bias.data, bias.type, stream_);
}

void CudaBackend::rms_norm(const Act& x, const Weight& w, float eps, Act y) {
    require_same_shape(x, y, "rms_norm");
    const int64_t group = w.n_in();
    if (group <= 0 || x.width % group != 0)
        fail("rms_norm", w.name + " has " + std::to_string(group) +
                             " values, which do not divide rows of " + std::to_string(x.width));
    cuda::rms_norm(x.data, x.rows, x.width, w.data, w.type, group, eps, y.data, stream_);
}

void CudaBackend::rope(Act x, int64_t n_head, int64_t head_dim, const RopeParams& p,
                       std::span<const int32_t> positions) {
    if (x.width != n_head * head_dim || int64_t(positions.size()) != x.rows)
        fail("rope", "activation " + dims(x) + " does not match " + std::to_string(n_head) +
                         " heads x " + std::to_string(head_dim) + " for " +
                         std::to_string(positions.size()) + " positions");
    if (x.rows == 0) return;
    cuda::rope(x.data, x.rows, n_head, head_dim, rope_args("rope", p), uploads_->get(positions),
               stream_);
}

void CudaBackend::attention(const AttentionParams& p, const Act& q, const Act& k, const Act& v,
                            const Batch& batch, KvCache& kv, Act out) {
    if (p.n_head_kv <= 0 || p.n_head % p.n_head_kv != 0)
        fail("attention", "head counts do not divide (" + std::to_string(p.n_head) + " / " +
                              std::to_string(p.n_head_kv) + ")");
    const int64_t n = batch.size();
    if (q.rows != n || k.rows != n || v.rows != n || out.rows != n ||
        q.width != p.n_head * p.head_dim_k || k.width != p.n_head_kv * p.head_dim_k ||
        v.width != p.n_head_kv * p.head_dim_v || out.width != p.n_head * p.head_dim_v)
        fail("attention", "q " + dims(q) + ", k " + dims(k) + ", v " + dims(v) + ", out " +
                              dims(out) + " do not match the batch and heads");
    if (n == 0) return;
    PagedKvCache& cache = device_cache(kv, "attention");
    const int64_t bt = cache.block_tokens(), n_seq = kv.shape().n_seq;

    // Pool rows of the batch's slots, and the block tables of its sequences.
    std::vector<int32_t> slot_rows(static_cast<size_t>(n));
    int64_t pitch = 1;
    int32_t max_pos = 0;
    bool consecutive = true;
    for (int64_t t = 0; t < n; ++t) {
        const int64_t seq = batch.seq_ids[size_t(t)], pos = batch.positions[size_t(t)];
        const std::span<const int32_t> table = cache.blocks_of(seq);
        if (pos < 0 || pos / bt >= int64_t(table.size()))
            fail("attention", "slot " + std::to_string(pos) + " of sequence " +
                                  std::to_string(seq) + " is not allocated (prepare() first)");
        slot_rows[size_t(t)] = int32_t(table[size_t(pos / bt)] * bt + pos % bt);
        pitch = std::max<int64_t>(pitch, int64_t(table.size()));
        max_pos = std::max<int32_t>(max_pos, int32_t(pos));
        if (t > 0 && (seq != batch.seq_ids[0] || pos != batch.positions[0] + t))
            consecutive = false;
    }
    std::vector<int32_t> tables(size_t(n_seq * pitch), 0);
    for (int64_t t = 0; t < n; ++t) {
        const int64_t seq = batch.seq_ids[size_t(t)];
        const std::span<const int32_t> table = cache.blocks_of(seq);
        std::copy(table.begin(), table.end(), tables.begin() + seq * pitch);
    }

    AttnBatchDev b;
    b.n_tok = n;
    b.pos = uploads_->get(batch.positions);
    b.seq = uploads_->get(batch.seq_ids);
    b.slot_row = uploads_->get(slot_rows);
    b.tables = uploads_->get(tables);
    b.table_pitch = pitch;
    b.block_tokens = bt;
    b.max_pos = max_pos;
    b.same_seq_consecutive = consecutive;
    const AttnShape sh = attn_shape(p);
    const KvLayerDev layer = layer_dev(cache, p.layer);

    key_scores_.forget(p.layer, batch);  // new keys at these positions
    kv_store(layer, b, sh, k.data, v.data, stream_);
    float* lse = nullptr;
    const bool capture = capture_ != nullptr && capture_->active();
    if (p.sinks != nullptr &&
        (p.sinks->type != GgmlType::F32 || p.sinks->n_in() != p.n_head || p.sinks->interleaved))
        fail("attention", "sinks '" + p.sinks->name + "' must be " + std::to_string(p.n_head) +
                              " F32 values (one per query head)");
    if (capture || p.sinks != nullptr) {  // the sinks need each row's log-sum-exp
        if (n * p.n_head > lse_capacity_) {
            FLUORO_CUDA_CHECK(cudaStreamSynchronize(stream_));
            if (lse_ != nullptr) cudaFree(lse_);
            lse_ = nullptr;
            lse_capacity_ = 0;
            FLUORO_CUDA_CHECK(
                cudaMalloc(reinterpret_cast<void**>(&lse_), size_t(n * p.n_head) * sizeof(float)));
            lse_capacity_ = n * p.n_head;
        }
        lse = lse_;
    }
    attn_->run(sh, layer, b, q.data, out.data, lse, stream_);
    if (p.sinks != nullptr)
        cuda::apply_sinks(out.data, lse, static_cast<const float*>(p.sinks->data), n, p.n_head,
                          p.head_dim_v, stream_);
    if (capture) serve_capture(p, q, batch, kv, lse);
}

void CudaBackend::serve_capture(const AttentionParams& p, const Act& q, const Batch& batch,
                                KvCache& kv, const float* d_lse) {
    AttentionCapture& cap = *capture_;
    PagedKvCache& cache = device_cache(kv, "attention capture");
    const int64_t n = batch.size(), dk = p.head_dim_k, group = p.n_head / p.n_head_kv;
    std::vector<float> lse(size_t(n * p.n_head));
    FLUORO_CUDA_CHECK(cudaMemcpyAsync(lse.data(), d_lse, lse.size() * sizeof(float),
                                      cudaMemcpyDeviceToHost, stream_));
    FLUORO_CUDA_CHECK(cudaStreamSynchronize(stream_));

    const AttnShape sh = attn_shape(p);
    const KvLayerDev layer = layer_dev(cache, p.layer);

    // Every row asked for, computed into one device buffer and read back with one copy.
    struct Job {
        int64_t t, h, lo, hi;  // keys [lo, hi) computed
        size_t offset;         // into the buffer
    };
    std::vector<Job> jobs;
    std::vector<CapturedAttentionRow> rows;
    size_t total = 0;
    const auto add_job = [&](int64_t t, int64_t h, int64_t lo, int64_t hi) {
        jobs.push_back({t, h, lo, hi, total});
        total += size_t(std::max<int64_t>(0, hi - lo));
    };
    for (const AttentionCaptureRegion& r : cap.regions) {
        if (r.layer >= 0 && r.layer != p.layer) continue;
        if (r.head >= p.n_head) continue;
        const int64_t h_begin = r.head < 0 ? 0 : r.head, h_end = r.head < 0 ? p.n_head : r.head + 1;
        const int64_t t_begin = r.rows > 0 ? std::max<int64_t>(0, n - r.rows) : 0;
        for (int64_t t = t_begin; t < n; ++t) {
            const int64_t pos = batch.positions[size_t(t)];
            const cpu::KeyRange keys = cpu::key_range(p, pos);
            const int64_t kb = std::max<int64_t>(0, r.key_begin);
            const int64_t ke = r.key_end > 0 ? r.key_end : pos + 1;
            for (int64_t h = h_begin; h < h_end; ++h) {
                CapturedAttentionRow row;
                row.id = r.id;
                row.layer = int32_t(p.layer);
                row.head = int32_t(h);
                row.seq = batch.seq_ids[size_t(t)];
                row.pos = pos;
                row.key_begin = kb;
                row.weights.assign(size_t(std::max<int64_t>(0, ke - kb)), 0.0f);
                rows.push_back(std::move(row));
                add_job(t, h, std::max(kb, keys.first), std::min(ke, pos + 1));
            }
        }
    }
    const size_t n_region_jobs = jobs.size();
    const bool stats = cap.stats;
    if (stats) {
        const int64_t t = n - 1;
        const cpu::KeyRange keys = cpu::key_range(p, batch.positions[size_t(t)]);
        for (int64_t h = 0; h < p.n_head; ++h) add_job(t, h, keys.first, keys.first + keys.count);
    }
    if (total == 0 && !stats) {
        for (CapturedAttentionRow& row : rows) cap.rows.push_back(std::move(row));
        return;
    }
    float* d_probs = nullptr;
    FLUORO_CUDA_CHECK(
        cudaMalloc(reinterpret_cast<void**>(&d_probs), std::max<size_t>(total, 1) * sizeof(float)));
    std::vector<float> probs(total);
    try {
        for (const Job& j : jobs) {
            if (j.hi <= j.lo) continue;
            const int64_t seq = batch.seq_ids[size_t(j.t)], pos = batch.positions[size_t(j.t)];
            const std::span<const int32_t> table = cache.blocks_of(seq);
            attention_probs(sh, layer, uploads_->get(table), cache.block_tokens(), int32_t(pos),
                            j.h / group, q.data + j.t * q.width + j.h * dk,
                            lse[size_t(j.t * p.n_head + j.h)], j.lo, j.hi, d_probs + j.offset,
                            stream_);
        }
        FLUORO_CUDA_CHECK(cudaMemcpyAsync(probs.data(), d_probs, total * sizeof(float),
                                          cudaMemcpyDeviceToHost, stream_));
        FLUORO_CUDA_CHECK(cudaStreamSynchronize(stream_));
    } catch (...) {
        cudaFree(d_probs);
        throw;
    }
    cudaFree(d_probs);

    for (size_t i = 0; i < n_region_jobs; ++i) {
        const Job& j = jobs[i];
        CapturedAttentionRow& row = rows[i];
        if (j.hi > j.lo)
            std::copy_n(probs.begin() + std::ptrdiff_t(j.offset), j.hi - j.lo,
                        row.weights.begin() + (j.lo - row.key_begin));
        cap.rows.push_back(std::move(row));
    }
    if (!stats) return;
    const int64_t t = n - 1, seq = batch.seq_ids[size_t(t)];
    LayerSparsity ls;
    ls.layer = int32_t(p.layer);
    ls.seq = seq;
    ls.pos = batch.positions[size_t(t)];
    ls.n_keys = jobs.back().hi - jobs.back().lo;
    for (int64_t h = 0; h < p.n_head; ++h) {
        const Job& j = jobs[n_region_jobs + size_t(h)];
        const std::span<const float> pr(probs.data() + j.offset, size_t(j.hi - j.lo));
        ls.heads.push_back(sparsity_of(pr, j.lo, cap.top_k, cap.threshold));
        float* scores = key_scores_.row(kv.shape(), p.layer, h / group, seq) + j.lo;
        for (size_t i = 0; i < pr.size(); ++i) scores[i] += pr[i];
    }
    cap.sparsity.push_back(std::move(ls));
}

void CudaBackend::kv_compact(KvCache& kv, int64_t seq, std::span<const int64_t> keep) {
    device_cache(kv, "kv_compact");
    kv.compact(seq, keep);
    key_scores_.compact(seq, keep);
}

void CudaBackend::kv_rope_shift(KvCache& kv, int64_t layer, int64_t seq, int64_t begin,
                                std::span<const int32_t> deltas, const RopeParams& p) {
    PagedKvCache& cache = device_cache(kv, "kv_rope_shift");
    const KvShape& s = kv.shape();
    if (layer < 0 || layer >= s.n_layer)
        fail("kv_rope_shift",
             "layer " + std::to_string(layer) + " of " + std::to_string(s.n_layer));
    const int64_t n = int64_t(deltas.size());
    if (begin < 0 || begin + n > kv.length(seq))
        fail("kv_rope_shift", "slots past the cached length");
    if (n == 0) return;
    const int64_t bt = cache.block_tokens();
    const std::span<const int32_t> table = cache.blocks_of(seq);
    std::vector<int32_t> rows(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
        const int64_t slot = begin + i;
        rows[size_t(i)] = int32_t(table[size_t(slot / bt)] * bt + slot % bt);
    }
    // A pure rotation: the cached keys already carry YaRN's magnitude.
    rope_shift_kv(layer_dev(cache, layer), s.n_head_kv[size_t(layer)], s.head_dim_k,
                  rope_args("kv_rope_shift", p, /*magnitude=*/false), uploads_->get(rows),
                  uploads_->get(deltas), n, stream_);
}

void CudaBackend::add(Act x, const Act& y) {
    require_same_shape(x, y, "add");
    cuda::add(x.data, y.data, x.size(), stream_);
}

void CudaBackend::scale(Act x, float s) {
    cuda::scale(x.data, s, x.size(), stream_);
}

void CudaBackend::swiglu_oai(Act gate, const Act& up, float alpha, float limit) {
    require_same_shape(gate, up, "swiglu_oai");
    cuda::swiglu_oai(gate.data, up.data, alpha, limit, gate.size(), stream_);
}

void CudaBackend::swiglu(Act gate, const Act& up) {
    require_same_shape(gate, up, "swiglu");
    cuda::swiglu(gate.data, up.data, gate.size(), stream_);
}

void CudaBackend::geglu_tanh(Act gate, const Act& up) {
    require_same_shape(gate, up, "geglu_tanh");
    cuda::geglu_tanh(gate.data, up.data, gate.size(), stream_);
}

void CudaBackend::softcap(Act x, float cap) {
    cuda::softcap(x.data, cap, x.size(), stream_);
}

void CudaBackend::copy_blocks(const Act& x, Act y, const BlockCopy& c) {
    check_block_copy("CUDA backend", x, y, c);
    cuda::copy_blocks(x.data, x.width, y.data, y.width, y.rows, c.width, c.n_blocks, c.x_offset,
                      c.x_stride, c.y_offset, c.y_stride, stream_);
}

void CudaBackend::gather_rows(const Act& x, std::span<const int32_t> rows, Act y) {
    if (int64_t(rows.size()) != y.rows || x.width != y.width)
        fail("gather_rows", "output " + dims(y) + " for " + std::to_string(rows.size()) +
                                " rows of width " + std::to_string(x.width));
    for (const int32_t r : rows)
        if (r < 0 || r >= x.rows)
            fail("gather_rows", "row " + std::to_string(r) + " of " + std::to_string(x.rows));
    if (rows.empty()) return;
    if (x.data == y.data) fail("gather_rows", "input and output overlap");
    cuda::gather_rows(x.data, x.width, uploads_->get(rows), y.rows, y.data, stream_);
}

void CudaBackend::read(const Act& x, std::span<float> host) {
    if (int64_t(host.size()) != x.size())
        fail("read", "host span of " + std::to_string(host.size()) + " floats for " + dims(x));
    if (x.size() > 0)
        FLUORO_CUDA_CHECK(cudaMemcpyAsync(host.data(), x.data, host.size() * sizeof(float),
                                          cudaMemcpyDeviceToHost, stream_));
    synchronize();
}

void CudaBackend::synchronize() {
    FLUORO_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

DeviceClock* CudaBackend::device_clock() {
    if (!clock_) clock_ = std::make_unique<CudaClock>(stream_);
    return clock_.get();
}

}  // namespace fluoro::cuda
