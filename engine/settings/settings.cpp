#include "settings/settings.h"

#include <algorithm>

namespace fluoro {
namespace {

// The item of `list` whose kind is k. Every enum value has an item (the tests check it), so the
// fallback to the first item is never taken.
template <typename Info, typename Kind>
const Info& info_of(std::span<const Info> list, Kind k) {
    for (const Info& i : list)
        if (i.kind == k) return i;
    return list.front();
}

template <typename Info>
auto parse_in(std::span<const Info> list, std::string_view name)
    -> std::optional<decltype(Info::kind)> {
    for (const Info& i : list)
        if (i.name == name) return i.kind;
    return std::nullopt;
}

// The recent windows of kv_decide when KvPolicyConfig::recent is 0. Window and streaming keep as
// recent everything the budget leaves after the sinks, full evicts nothing: the whole budget.
int64_t recent_whole_budget(int64_t budget, int64_t) {
    return budget;
}
// H2O's paper splits the budget half heavy hitters, half recent.
int64_t recent_half(int64_t budget, int64_t) {
    return std::max<int64_t>(1, budget / 2);
}
// Scissorhands protects a quarter.
int64_t recent_quarter(int64_t budget, int64_t) {
    return std::max<int64_t>(1, budget / 4);
}
// SnapKV keeps its observation window (at most half the budget).
int64_t recent_observed(int64_t budget, int64_t observe) {
    return std::clamp<int64_t>(observe, 1, std::max<int64_t>(1, budget / 2));
}

constexpr KvPolicyInfo kKvPolicies[] = {
    {KvPolicyKind::Full, "full", "full (stop at the limit)",
     "never evicts: the conversation stops with an error at the budget", false, false, false, false,
     recent_whole_budget, "nothing is evicted"},
    {KvPolicyKind::Window, "window", "sliding window", "keeps the most recent tokens", true, false,
     false, false, recent_whole_budget, "the whole budget"},
    {KvPolicyKind::Streaming, "streaming", "sinks + window (StreamingLLM)",
     "keeps the first tokens, the attention sinks, and the most recent ones", true, true, false,
     false, recent_whole_budget, "the budget after the sinks"},
    {KvPolicyKind::H2O, "h2o", "heavy hitters (H2O)",
     "keeps the sinks, the tokens with the most accumulated attention and the recent ones", true,
     true, true, true, recent_half, "budget / 2"},
    {KvPolicyKind::Scissorhands, "scissorhands", "Scissorhands",
     "keeps the sinks, the recent tokens, and evicts first the tokens most often attended below "
     "average",
     true, true, true, true, recent_quarter, "budget / 4"},
    {KvPolicyKind::SnapKV, "snapkv", "SnapKV (prefill)",
     "at the end of a long prefill keeps the sinks and the prompt tokens its last queries attend "
     "to most; later evictions as h2o",
     true, true, true, true, recent_observed,
     "the 32-token observation window at the prefill, budget / 2 later as h2o"},
};

constexpr KvTypeInfo kKvTypes[] = {
    {KvType::F32, "f32", "f32", "32-bit floats: exact, twice the memory of f16", 1, 4},
    {KvType::F16, "f16", "f16", "16-bit floats", 1, 2},
    {KvType::Q8_0, "q8_0", "q8_0", "8-bit blocks of 32 values in 34 bytes: about half of f16",
     kKvQuantBlock, 34},
    {KvType::Q4_0, "q4_0", "q4_0", "4-bit blocks of 32 values in 18 bytes: about a quarter of f16",
     kKvQuantBlock, 18},
};

constexpr AttentionImplInfo kAttentionImpls[] = {
    {AttentionImpl::Standard, "standard", "standard",
     "materializes each query row's scores, softmax, weighted sum"},
    {AttentionImpl::Flash, "flash", "flash", "keys in tiles with an online softmax"},
};

constexpr MlaPathInfo kMlaPaths[] = {
    {MlaPath::Absorbed, "absorbed", "absorbed",
     "attention in the latent space; caches RoPE dims + latent per token"},
    {MlaPath::Naive, "naive", "naive",
     "every head's key and value up-projected and cached (MHA-sized cache)"},
};

constexpr BackendKindInfo kBackendKinds[] = {
    {BackendKind::Cpu, "cpu", "CPU", "the CPU backend: AVX2 kernels on all cores"},
    {BackendKind::Cuda, "cuda", "CUDA", "an NVIDIA GPU, when the program is built with CUDA"},
};

constexpr TelemetryLevelInfo kTelemetryLevels[] = {
    {TelemetryLevel::Off, "off", "off", "tokens and run start/finish only"},
    {TelemetryLevel::Summary, "summary", "summary",
     "also a record per forward step, the top alternatives of each token, prefix-cache events "
     "and memory counters"},
    {TelemetryLevel::Full, "full", "full",
     "also time per operation inside each step and KV occupancy snapshots"},
    {TelemetryLevel::Trace, "trace", "trace",
     "also every operation of each step in order (layer, bytes, FLOPs) and the worker threads' "
     "busy spans, for a timeline"},
};

constexpr SpecModeInfo kSpecModes[] = {
    {SpecMode::Off, "off", "none", "off", "no speculative decoding", false, false, false, false,
     false},
    {SpecMode::PromptLookup, "prompt_lookup", "ngram", "prompt lookup",
     "drafts the tokens that followed the last n-gram earlier in the conversation", true, false,
     false, false, true},
    {SpecMode::DraftModel, "draft_model", "", "draft model",
     "a smaller model with the same vocabulary drafts", true, true, false, true, false},
    {SpecMode::SelfSpeculative, "self_speculative", "self", "self-speculative",
     "the model's first layers draft, exiting early", true, false, true, true, false},
};

}  // namespace

std::span<const KvPolicyInfo> kv_policies() {
    return kKvPolicies;
}
const KvPolicyInfo& kv_policy_info(KvPolicyKind k) {
    return info_of(kv_policies(), k);
}
std::string_view kv_policy_name(KvPolicyKind k) {
    return kv_policy_info(k).name;
}
std::optional<KvPolicyKind> parse_kv_policy(std::string_view name) {
    return parse_in(kv_policies(), name);
}

std::span<const KvTypeInfo> kv_types() {
    return kKvTypes;
}
const KvTypeInfo& kv_type_info(KvType t) {
    return info_of(kv_types(), t);
}
std::string_view kv_type_name(KvType t) {
    return kv_type_info(t).name;
}
std::optional<KvType> parse_kv_type(std::string_view name) {
    return parse_in(kv_types(), name);
}
bool kv_type_quantized(KvType t) {
    return kv_type_info(t).quantized();
}
std::string kv_types_name(KvTypes t) {
    std::string name(kv_type_name(t.k));
    if (!t.same()) {
        name += '/';
        name += kv_type_name(t.v);
    }
    return name;
}
std::optional<KvTypes> parse_kv_types(std::string_view name) {
    const size_t slash = name.find('/');
    const std::optional<KvType> k = parse_kv_type(name.substr(0, slash));
    if (!k) return std::nullopt;
    if (slash == std::string_view::npos) return KvTypes{*k};
    const std::optional<KvType> v = parse_kv_type(name.substr(slash + 1));
    if (!v) return std::nullopt;
    return KvTypes{*k, *v};
}

std::span<const AttentionImplInfo> attention_impls() {
    return kAttentionImpls;
}
const AttentionImplInfo& attention_impl_info(AttentionImpl a) {
    return info_of(attention_impls(), a);
}
std::string_view attention_impl_name(AttentionImpl a) {
    return attention_impl_info(a).name;
}
std::optional<AttentionImpl> parse_attention_impl(std::string_view name) {
    return parse_in(attention_impls(), name);
}

std::span<const MlaPathInfo> mla_paths() {
    return kMlaPaths;
}
std::string_view mla_path_name(MlaPath p) {
    return info_of(mla_paths(), p).name;
}
std::optional<MlaPath> parse_mla_path(std::string_view name) {
    return parse_in(mla_paths(), name);
}

std::span<const BackendKindInfo> backend_kinds() {
    return kBackendKinds;
}
const BackendKindInfo& backend_kind_info(BackendKind k) {
    return info_of(backend_kinds(), k);
}
std::string_view backend_kind_name(BackendKind k) {
    return backend_kind_info(k).name;
}
std::optional<BackendKind> parse_backend_kind(std::string_view name) {
    return parse_in(backend_kinds(), name);
}

std::span<const TelemetryLevelInfo> telemetry_levels() {
    return kTelemetryLevels;
}
const TelemetryLevelInfo& telemetry_level_info(TelemetryLevel level) {
    return info_of(telemetry_levels(), level);
}
std::string_view telemetry_level_name(TelemetryLevel level) {
    return telemetry_level_info(level).name;
}
std::optional<TelemetryLevel> parse_telemetry_level(std::string_view text) {
    return parse_in(telemetry_levels(), text);
}

std::span<const SpecModeInfo> spec_modes() {
    return kSpecModes;
}
const SpecModeInfo& spec_mode_info(SpecMode m) {
    return info_of(spec_modes(), m);
}
std::string_view spec_mode_name(SpecMode m) {
    return spec_mode_info(m).name;
}
std::optional<SpecMode> parse_spec_mode(std::string_view name) {
    for (const SpecModeInfo& i : spec_modes())
        if (i.name == name || (!i.alias.empty() && i.alias == name)) return i.kind;
    return std::nullopt;
}

}  // namespace fluoro
