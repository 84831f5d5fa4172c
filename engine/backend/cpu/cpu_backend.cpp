#include "backend/cpu/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backend/cpu/cpu_attention.h"
#include "backend/cpu/kernels/interleave.h"
#include "backend/cpu/kernels/vec_dot.h"
#include "backend/cpu/kernels/vec_math.h"
#include "backend/cpu/kv_rows.h"
#include "core/error.h"
#include "gguf/gguf_file.h"
#include "kv/contiguous_kv.h"
#include "kv/paged_kv.h"
#include "tensor/dequantize.h"

namespace fluoro::cpu {
namespace {

void require_same_shape(const Act& a, const Act& b, const char* op) {
    if (a.rows != b.rows || a.width != b.width)
        throw Error(std::string("cpu backend: ") + op + ": shape mismatch (" +
                    std::to_string(a.rows) + "x" + std::to_string(a.width) + " vs " +
                    std::to_string(b.rows) + "x" + std::to_string(b.width) + ")");
}

// Rows per task for elementwise work: big enough that a task is worth a claim.
int64_t rows_per_task(int64_t width) {
    return std::max<int64_t>(1, 16384 / std::max<int64_t>(1, width));
}

template <typename Fn>
void for_rows(ThreadPool& pool, int64_t rows, int64_t width, Fn&& fn) {
    const int64_t chunk = rows_per_task(width);
    const int64_t n_tasks = (rows + chunk - 1) / chunk;
    pool.run(n_tasks, [&](int64_t task, int) {
        const int64_t end = std::min(rows, (task + 1) * chunk);
        for (int64_t r = task * chunk; r < end; ++r) fn(r);
    });
}

const float* f32_data(const Weight& w, const char* op) {
    if (w.type != GgmlType::F32)
        throw UnsupportedError(std::string("cpu backend: ") + op + " needs an f32 tensor, '" +
                               w.name + "' is " + std::string(type_name(w.type)));
    return static_cast<const float*>(w.data);
}

// Bytes of a matrix copied into row groups between drops of the file's pages.
constexpr int64_t kInterleaveSliceBytes = int64_t(8) << 20;

// FLUORO_CPU_INTERLEAVE=0 keeps every weight in its GGUF layout (to compare speed in one build);
// so does the FLUORO_CPU_F32_ACTIVATIONS diagnostic (matmul.h).
bool interleave_enabled() {
    static const bool enabled = [] {
        const char* v = std::getenv("FLUORO_CPU_INTERLEAVE");
        return (!v || std::string_view(v) != "0") && !f32_activations();
    }();
    return enabled;
}

}  // namespace

CpuBackend::CpuBackend(int n_threads)
    : pool_(n_threads > 0 ? n_threads : ThreadPool::default_threads()) {}

Weight CpuBackend::load_weight(const gguf::GgufFile& file, const gguf::TensorInfo& info) {
    Weight w;
    w.name = info.name;
    w.type = info.type;
    for (size_t d = 0; d < 4; ++d) w.ne[d] = int64_t(info.ne[d]);
    w.data = file.tensor_data(info).data();
    w.row_bytes = size_t(*row_bytes(info.type, info.ne[0]));
    // A matrix whose type has a row-group kernel here is copied into groups (same bytes, 64-byte
    // aligned): its kernels then need fewer instructions (Q4_1: kernels/interleave.h).
    const bool matrix = w.ne[2] == 1 && w.ne[3] == 1;
    if (matrix && interleave_enabled() && interleavable(w.type, w.n_out()) &&
        row_group_dot_fn(w.type)) {
        const size_t bytes = w.row_bytes * size_t(w.n_out());
        std::byte* copy = weights_.allocate(bytes);
        if (copy) {  // without memory for the copy the weights keep the file layout (slower)
            // In slices, each slice's file pages dropped once copied (they are not read again),
            // so a large matrix (Gemma 3's 170 MiB output head) is not resident twice at once.
            const auto* src = static_cast<const std::byte*>(w.data);
            const int64_t slice =
                kGroupRows *
                std::max<int64_t>(1, kInterleaveSliceBytes / int64_t(w.row_bytes) / kGroupRows);
            for (int64_t r = 0; r < w.n_out(); r += slice) {
                const int64_t n = std::min(slice, w.n_out() - r);
                const size_t at = size_t(r) * w.row_bytes, len = size_t(n) * w.row_bytes;
                interleave_rows(w.type, src + at, n, w.n_in(), copy + at);
                file.drop_pages({src + at, len});
            }
            file.drop_pages(file.tensor_data(info));  // and the pages the slices shared
            w.data = copy;
            w.interleaved = true;
        }
    }
    return w;
}

std::unique_ptr<KvCache> CpuBackend::create_kv(const KvShape& shape) {
    if (shape.paged) return std::make_unique<PagedKvCache>(shape);
    return std::make_unique<ContiguousKvCache>(shape);
}

Act CpuBackend::alloc_act(int64_t rows, int64_t width) {
    acts_.push_back(std::make_unique<float[]>(size_t(rows * width)));
    return Act{acts_.back().get(), rows, width};
}

void CpuBackend::reserve(int64_t max_tokens, int64_t max_width) {
    matmul_scratch_.reserve(max_tokens, max_width);
}

void CpuBackend::get_rows(const Weight& table, std::span<const int32_t> ids, Act y) {
    if (int64_t(ids.size()) != y.rows || table.n_in() != y.width)
        throw Error("cpu backend: get_rows: output shape does not match '" + table.name + "'");
    for_rows(pool_, y.rows, y.width, [&](int64_t r) {
        const int32_t id = ids[size_t(r)];
        if (id < 0 || id >= table.n_out())
            throw Error("token id " + std::to_string(id) + " is outside the vocabulary of " +
                        std::to_string(table.n_out()) + " tokens");
        if (table.interleaved) {
            // One GGUF row back out of its group (per call: get_rows is the embedding lookup).
            std::vector<std::byte> row(table.row_bytes);
            deinterleave_row(table.type, table.data, id, table.n_in(), row.data());
            dequantize_row(table.type, row.data(), y.data + r * y.width, y.width);
            return;
        }
        const auto* row = static_cast<const std::byte*>(table.data) + size_t(id) * table.row_bytes;
        dequantize_row(table.type, row, y.data + r * y.width, y.width);
    });
}

namespace {

WeightView view_of(const Weight& w, const Act& x, const Act& y) {
    if (x.width != w.n_in() || y.width != w.n_out() || x.rows != y.rows)
        throw Error("cpu backend: matmul with '" + w.name + "': activations " +
                    std::to_string(x.rows) + "x" + std::to_string(x.width) + " -> " +
                    std::to_string(y.rows) + "x" + std::to_string(y.width) + " do not fit " +
                    std::to_string(w.n_in()) + " -> " + std::to_string(w.n_out()));
    return WeightView{w.type, w.n_in(), w.n_out(), w.data, w.row_bytes, w.interleaved};
}

}  // namespace

void CpuBackend::matmul(const Weight& w, const Act& x, Act y, OpCategory) {
    cpu::matmul(pool_, view_of(w, x, y), x.data, x.rows, y.data, matmul_scratch_);
}

void CpuBackend::matmul_many(const Act& x, std::span<const MatmulOut> outs, OpCategory cat) {
    if (outs.size() > kMaxMatmulTargets) return Backend::matmul_many(x, outs, cat);
    MatmulTarget targets[kMaxMatmulTargets];
    for (size_t j = 0; j < outs.size(); ++j)
        targets[j] = {view_of(*outs[j].w, x, outs[j].y), outs[j].y.data};
    cpu::matmul_many(pool_, std::span(targets, outs.size()), x.data, x.rows, matmul_scratch_);
}

void CpuBackend::add_bias(Act y, const Weight& bias) {
    const float* b = f32_data(bias, "add_bias");
    for_rows(pool_, y.rows, y.width, [&](int64_t r) {
        float* row = y.data + r * y.width;
        for (int64_t i = 0; i < y.width; ++i) row[i] += b[i];
    });
}

void CpuBackend::rms_norm(const Act& x, const Weight& w, float eps, Act y) {
    require_same_shape(x, y, "rms_norm");
    const float* g = f32_data(w, "rms_norm");
    const int64_t n = w.n_in();
    if (n <= 0 || x.width % n != 0)
        throw Error("cpu backend: rms_norm: '" + w.name + "' does not divide the row width");
    const VecMath& vm = vec_math();
    for_rows(pool_, x.rows * (x.width / n), n,
             [&](int64_t r) { vm.rms_norm(x.data + r * n, g, y.data + r * n, n, eps); });
}

namespace {

// The factors of rope_freqs (llama3) as host floats, checked against the rotated pairs.
const float* rope_factors(const RopeParams& p, const char* op) {
    if (!p.freq_factors) return nullptr;
    if (p.freq_factors->n_in() < p.n_rot / 2)
        throw Error(std::string("cpu backend: ") + op + ": '" + p.freq_factors->name + "' has " +
                    std::to_string(p.freq_factors->n_in()) + " factors for " +
                    std::to_string(p.n_rot / 2) + " rotated pairs");
    return f32_data(*p.freq_factors, op);
}

}  // namespace

void CpuBackend::rope(Act x, int64_t n_head, int64_t head_dim, const RopeParams& p,
                      std::span<const int32_t> positions) {
    if (x.width != n_head * head_dim || int64_t(positions.size()) != x.rows)
        throw Error("cpu backend: rope: activation shape does not match heads x head_dim");
    // theta_i = pos * base^(-2i/n_rot), stepped in float32 as ggml does; scaling in rope.h.
    const RopeCoeffs k = rope_coeffs(p);
    const float* ff = rope_factors(p, "rope");
    const int64_t half = p.n_rot / 2;
    for_rows(pool_, x.rows, x.width, [&](int64_t r) {
        float theta = float(positions[size_t(r)]);
        for (int64_t i = 0; i < half; ++i) {
            float c, s;
            rope_cos_sin(theta, ff ? ff[i] : 1.0f, i, k, &c, &s);
            for (int64_t h = 0; h < n_head; ++h) {
                float* v = x.data + r * x.width + h * head_dim;
                const int64_t a = p.mode == RopeMode::Neox ? i : 2 * i;
                const int64_t b = p.mode == RopeMode::Neox ? i + half : 2 * i + 1;
                const float x0 = v[a], x1 = v[b];
                v[a] = x0 * c - x1 * s;
                v[b] = x0 * s + x1 * c;
            }
            theta *= k.theta_scale;
        }
    });
}

void CpuBackend::kv_compact(KvCache& kv, int64_t seq, std::span<const int64_t> keep) {
    kv.compact(seq, keep);
    key_scores_.compact(seq, keep);
}

void CpuBackend::kv_rope_shift(KvCache& kv, int64_t layer, int64_t seq, int64_t begin,
                               std::span<const int32_t> deltas, const RopeParams& p) {
    const KvShape& s = kv.shape();
    if (layer < 0 || layer >= s.n_layer)
        throw Error("cpu backend: kv_rope_shift: layer " + std::to_string(layer) + " of " +
                    std::to_string(s.n_layer));
    if (begin < 0 || begin + int64_t(deltas.size()) > kv.length(seq))
        throw Error("cpu backend: kv_rope_shift: slots past the cached length");
    const int64_t n = int64_t(deltas.size());
    if (n == 0) return;
    const int64_t n_head = s.n_head_kv[size_t(layer)], hd = s.head_dim_k;
    const int64_t width = s.k_row_elems(layer), half = p.n_rot / 2;
    // A compaction shifts long runs of rows by the same delta: one cos/sin table per run,
    // computed exactly as rope() steps theta (so a shift equals rope() at that position).
    std::vector<int64_t> table_of(static_cast<size_t>(n));
    std::vector<float> tables;  // per table: half cosines, then half sines
    // A pure rotation: the cached keys already carry YaRN's magnitude.
    const RopeCoeffs coeffs = rope_coeffs(p, /*magnitude=*/false);
    const float* ff = rope_factors(p, "kv_rope_shift");
    for (int64_t r = 0; r < n; ++r) {
        if (r > 0 && deltas[size_t(r)] == deltas[size_t(r - 1)]) {
            table_of[size_t(r)] = table_of[size_t(r - 1)];
            continue;
        }
        table_of[size_t(r)] = int64_t(tables.size()) / (2 * half);
        float theta = float(deltas[size_t(r)]);
        const size_t at = tables.size();
        tables.resize(at + size_t(2 * half));
        for (int64_t i = 0; i < half; ++i) {
            rope_cos_sin(theta, ff ? ff[i] : 1.0f, i, coeffs, &tables[at + size_t(i)],
                         &tables[at + size_t(half + i)]);
            theta *= coeffs.theta_scale;
        }
    }
    // Rows in parallel chunks through a float buffer: load (dequantize), rotate, store.
    constexpr int64_t kChunk = 64;
    pool_.run((n + kChunk - 1) / kChunk, [&](int64_t c, int) {
        std::vector<float> row(static_cast<size_t>(width));
        for (int64_t r = c * kChunk; r < std::min(n, (c + 1) * kChunk); ++r) {
            const KvCache::Slot k = kv.k_slot(layer, seq, begin + r);
            const float* cs = tables.data() + table_of[size_t(r)] * 2 * half;
            for (int64_t h = 0; h < n_head; ++h) {
                float* v = row.data() + h * hd;
                kv_load(s.type.k, k.head(h), v, hd);
                for (int64_t i = 0; i < half; ++i) {
                    const int64_t a = p.mode == RopeMode::Neox ? i : 2 * i;
                    const int64_t b = p.mode == RopeMode::Neox ? i + half : 2 * i + 1;
                    const float x0 = v[a], x1 = v[b], co = cs[i], si = cs[half + i];
                    v[a] = x0 * co - x1 * si;
                    v[b] = x0 * si + x1 * co;
                }
                kv_store(s.type.k, v, k.head(h), hd);
            }
        }
    });
}

void CpuBackend::attention(const AttentionParams& p, const Act& q, const Act& k, const Act& v,
                           const Batch& batch, KvCache& kv, Act out) {
    if (p.n_head_kv <= 0 || p.n_head % p.n_head_kv != 0)
        throw Error("cpu backend: attention: head counts do not divide");
    store_kv(pool_, p, k, v, batch, kv);
    const bool stats = capture_ && capture_->stats;
    key_scores_.forget(p.layer, batch);  // new keys at these positions
    attend(pool_, p, q, batch, kv, out, attn_scratch_,
           {attn_impl_, stats ? batch.size() - 1 : int64_t{-1}});
    if (!capture_) return;
    if (wants_rows(*capture_, p.layer)) capture_rows(p, q, batch, kv, attn_scratch_, *capture_);
    if (stats) compute_sparsity(pool_, p, batch, kv.shape(), attn_scratch_, *capture_, key_scores_);
}

void CpuBackend::add(Act x, const Act& y) {
    require_same_shape(x, y, "add");
    const VecMath& vm = vec_math();
    for_rows(pool_, x.rows, x.width,
             [&](int64_t r) { vm.add(x.data + r * x.width, y.data + r * y.width, x.width); });
}

void CpuBackend::scale(Act x, float s) {
    const VecMath& vm = vec_math();
    for_rows(pool_, x.rows, x.width,
             [&](int64_t r) { vm.scale(x.data + r * x.width, x.width, s, false); });
}

void CpuBackend::swiglu(Act gate, const Act& up) {
    require_same_shape(gate, up, "swiglu");
    const VecMath& vm = vec_math();
    for_rows(pool_, gate.rows, gate.width, [&](int64_t r) {
        vm.swiglu(gate.data + r * gate.width, up.data + r * up.width, gate.width);
    });
}

void CpuBackend::swiglu_oai(Act gate, const Act& up, float alpha, float limit) {
    require_same_shape(gate, up, "swiglu_oai");
    for_rows(pool_, gate.rows, gate.width, [&](int64_t r) {
        float* g = gate.data + r * gate.width;
        const float* u = up.data + r * up.width;
        for (int64_t i = 0; i < gate.width; ++i) {  // as ggml's swiglu_oai, in float
            const float x = std::min(g[i], limit), y = std::clamp(u[i], -limit, limit);
            g[i] = x / (1.0f + std::exp(-alpha * x)) * (y + 1.0f);
        }
    });
}

void CpuBackend::geglu_tanh(Act gate, const Act& up) {
    require_same_shape(gate, up, "geglu_tanh");
    const VecMath& vm = vec_math();
    for_rows(pool_, gate.rows, gate.width, [&](int64_t r) {
        vm.geglu_tanh(gate.data + r * gate.width, up.data + r * up.width, gate.width);
    });
}

void CpuBackend::softcap(Act x, float cap) {
    const VecMath& vm = vec_math();
    for_rows(pool_, x.rows, x.width,
             [&](int64_t r) { vm.softcap(x.data + r * x.width, x.width, cap); });
}

void CpuBackend::gather_rows(const Act& x, std::span<const int32_t> rows, Act y) {
    if (int64_t(rows.size()) != y.rows || x.width != y.width)
        throw Error("cpu backend: gather_rows: shape mismatch");
    for (size_t i = 0; i < rows.size(); ++i) {
        if (rows[i] < 0 || rows[i] >= x.rows)
            throw Error("cpu backend: gather_rows: row out of range");
        if (y.data + int64_t(i) * y.width != x.data + rows[i] * x.width)
            std::memmove(y.data + int64_t(i) * y.width, x.data + rows[i] * x.width,
                         size_t(x.width) * sizeof(float));
    }
}

void CpuBackend::copy_blocks(const Act& x, Act y, const BlockCopy& c) {
    check_block_copy("cpu backend", x, y, c);
    for_rows(pool_, y.rows, c.n_blocks * c.width, [&](int64_t r) {
        const float* xr = x.data + r * x.width + c.x_offset;
        float* yr = y.data + r * y.width + c.y_offset;
        for (int64_t b = 0; b < c.n_blocks; ++b)
            std::memcpy(yr + b * c.y_stride, xr + b * c.x_stride, size_t(c.width) * sizeof(float));
    });
}

void CpuBackend::add_rows_scaled(Act x, Act y, std::span<const int32_t> rows,
                                 std::span<const float> scales) {
    check_add_rows_scaled(x, y, rows, scales);
    // Distinct rows: each task writes its own rows of x.
    for_rows(pool_, y.rows, y.width, [&](int64_t i) {
        float* out = x.data + int64_t(rows[size_t(i)]) * x.width;
        const float* in = y.data + i * y.width;
        const float s = scales[size_t(i)];
        for (int64_t j = 0; j < x.width; ++j) out[j] += s * in[j];
    });
}

void CpuBackend::read(const Act& x, std::span<float> host) {
    if (int64_t(host.size()) < x.size()) throw Error("cpu backend: read: host buffer too small");
    std::memcpy(host.data(), x.data, size_t(x.size()) * sizeof(float));
}

}  // namespace fluoro::cpu
