#include "runtime/prefix_cache_persistence.h"

#include <algorithm>
#include <cstdio>

#include "core/error.h"
#include "core/sha256.h"
#include "kv/prefix_cache.h"
#include "model/model.h"

namespace fluoro {
namespace {

std::string num(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

}  // namespace

PrefixCacheKey prefix_cache_key(const Model& model, const std::filesystem::path& model_path,
                                KvTypes kv_type, std::string_view backend) {
    const std::string model_sha256 = sha256_file_cached(model_path);
    const Hparams& hp = model.hparams();
    // The cache's own shape, not the file's head counts: a deepseek2 model caches one latent row
    // on the absorbed path and every head on the naive one.
    KvShape shape = model.kv_shape();
    shape.type = kv_type;
    std::string heads;
    for (const int64_t h : shape.n_head_kv) {
        if (!heads.empty()) heads += ',';  // appends: GCC 12 misreports `a + b` here (-Wrestrict)
        heads += std::to_string(h);
    }
    PrefixCacheKey k;
    k.fields = {
        {"model_sha256", model_sha256},
        {"arch", hp.arch},
        {"n_layer", std::to_string(hp.n_layer)},
        {"n_head_kv", heads},
        {"head_dim_k", std::to_string(shape.head_dim_k)},
        {"head_dim_v", std::to_string(shape.head_dim_v)},
        {"n_rot", std::to_string(hp.n_rot)},
        {"rope_freq_base", num(hp.rope_freq_base)},
        {"rope_freq_scale", num(hp.rope_freq_scale)},
        {"rope_scaling_type", hp.rope_scaling_type.empty() ? "none" : hp.rope_scaling_type},
        {"n_vocab", std::to_string(model.n_vocab())},
        {"kv_type", kv_types_name(kv_type)},
        // Backends compute K/V with different kernels: rows from one are not bit-equal to what
        // the other would compute, so a restore must not mix them.
        {"backend", std::string(backend)},
    };
    // Only where it applies, so the keys of every other model stay what they were: the file of a
    // cache holding the values apart has rows this one does not read.
    if (shape.values_in_keys()) k.fields.emplace_back("v_in_k", std::to_string(shape.v_in_k));
    return k;
}

PrefixCachePersistence::PrefixCachePersistence(std::filesystem::path file, PrefixCacheKey key,
                                               std::chrono::milliseconds interval)
    : file_(std::move(file)), key_(std::move(key)), interval_(interval) {}

PrefixCachePersistence::Restored PrefixCachePersistence::restore(PrefixCache& cache,
                                                                 int64_t scratch_seq) {
    std::error_code ec;
    if (!std::filesystem::exists(file_, ec)) return {};
    try {
        const PrefixCacheFileStats st = restore_prefix_cache(cache, scratch_seq, key_, file_);
        const PrefixCache::Stats after = cache.stats();
        saved_stored_ = after.stored;
        saved_evictions_ = after.evictions;
        last_save_ = std::chrono::steady_clock::now();
        char ms[32];
        std::snprintf(ms, sizeof ms, "%.0f", st.ms);
        std::string line = "prefix cache: restored " + std::to_string(st.entries) +
                           (st.entries == 1 ? " entry (" : " entries (") +
                           std::to_string(st.tokens) + " tokens) from " + file_.string() + " in " +
                           ms + " ms";
        if (st.skipped > 0)
            line += "; " + std::to_string(st.skipped) + " did not fit the cache and were skipped";
        return {line, st};
    } catch (const std::exception& e) {
        return {std::string("prefix cache: ignored, starting empty: ") + e.what(), {}};
    }
}

std::optional<PrefixCacheFileStats> PrefixCachePersistence::save_if_due(
    const PrefixCache& cache, std::span<const int32_t> live_tokens, int64_t live_seq, bool force) {
    const PrefixCache::Stats st = cache.stats();
    const bool changed =
        st.stored != saved_stored_ || st.evictions != saved_evictions_ ||
        !std::equal(live_tokens.begin(), live_tokens.end(), saved_live_.begin(), saved_live_.end());
    if (!changed) return std::nullopt;
    const auto now = std::chrono::steady_clock::now();
    if (!force && now - last_save_ < interval_) return std::nullopt;
    last_save_ = now;  // a failing disk is retried after the interval, not after every run
    const PrefixCacheExtra live{live_tokens, live_seq};
    const PrefixCacheFileStats written =
        save_prefix_cache(cache, key_, file_, std::span<const PrefixCacheExtra>(&live, 1));
    saved_stored_ = st.stored;
    saved_evictions_ = st.evictions;
    saved_live_.assign(live_tokens.begin(), live_tokens.end());
    return written;
}

}  // namespace fluoro
