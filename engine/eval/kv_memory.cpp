#include "eval/kv_memory.h"

#include <cmath>

#include "kv/kv_cache.h"
#include "model/model.h"

namespace fluoro {
namespace {

// GGML's storage: f32 4 bytes, f16 2; q8_0 a 32-value block of an f16 scale and 32 int8 (34
// bytes), q4_0 an f16 scale and 32 4-bit values (18 bytes).
double element_bytes(KvType t) {
    switch (t) {
        case KvType::F32:
            return 4.0;
        case KvType::F16:
            return 2.0;
        case KvType::Q8_0:
            return 34.0 / 32.0;
        case KvType::Q4_0:
            return 18.0 / 32.0;
    }
    return 0;
}

}  // namespace

uint64_t kv_bytes_per_token(int64_t layers, int64_t kv_heads, int64_t head_dim,
                            double element_bytes) {
    return uint64_t(
        std::llround(2.0 * double(layers) * double(kv_heads) * double(head_dim) * element_bytes));
}

std::vector<KvMemoryRow> measure_kv_memory(const Model& model, std::span<const KvType> types,
                                           int64_t ctx) {
    const auto& hp = model.hparams();
    std::vector<KvMemoryRow> out;
    for (const KvType t : types) {
        KvMemoryRow r;
        r.type = t;
        r.element_bytes = element_bytes(t);
        double formula = 0;
        for (uint64_t l = 0; l < hp.n_layer; ++l)
            formula +=
                double(hp.n_head_kv[l]) * double(hp.head_dim_k + hp.head_dim_v) * r.element_bytes;
        r.formula_per_token = uint64_t(std::llround(formula));
        const std::unique_ptr<KvCache> kv = model.create_kv(ctx, 1, t);
        r.cache_per_token = kv->shape().bytes_per_token();
        r.ctx = ctx;
        r.allocated = kv->bytes_allocated();
        out.push_back(r);
    }
    return out;
}

}  // namespace fluoro
