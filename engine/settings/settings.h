// The engine's setting vocabulary: every enum a user chooses from (KV cache policy, KV storage
// type, attention implementation, backend, telemetry level, speculative drafter), each listed once
// with its items' traits (name, label, one-line description and what the engine does with it).
// The CLI builds its help and validation from these lists and the GUI its combo boxes and
// enabled states, so a new item or a changed default shows everywhere at once; the tests hold the
// traits to the behaviour of the code that acts on them (kv_decide, kv_row_bytes, ...).
//
// The lowest layer above engine/core: the modules that act on a setting (kv/, backend/,
// telemetry/, speculative/) include this, and runtime/engine_commands.h re-exports it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace fluoro {

// ---- KV cache eviction policy (kv/kv_policy.h applies it) ----

enum class KvPolicyKind { Full, Window, Streaming, H2O, Scissorhands, SnapKV };

struct KvPolicyInfo {
    KvPolicyKind kind;
    std::string_view name;         // "streaming": the CLI value and the stored name
    std::string_view label;        // what a menu shows
    std::string_view description;  // one line for help and tooltips
    bool evicts;                   // false: the sequence stops with an error at its budget
    bool uses_sinks;               // keeps KvPolicyConfig::sinks first tokens
    bool needs_scores;             // reads accumulated attention (AttentionCapture::stats)
    // Whether KvPolicyConfig::recent sets its recent window; the others keep, after the sinks,
    // as recent all the budget leaves (window, streaming) or evict nothing (full).
    bool recent_setting;
    // The recent window kept when KvPolicyConfig::recent is 0, for an effective budget and
    // KvPolicyConfig::observe (KvPolicyConfig::effective_recent), and that rule in words.
    int64_t (*default_recent)(int64_t budget, int64_t observe);
    std::string_view default_recent_text;
};

std::span<const KvPolicyInfo> kv_policies();
const KvPolicyInfo& kv_policy_info(KvPolicyKind k);
std::string_view kv_policy_name(KvPolicyKind k);  // "full", "window", "streaming", ...
std::optional<KvPolicyKind> parse_kv_policy(std::string_view name);

// ---- KV cache storage type (kv/kv_cache.h) ----

// Storage type of cached K and V rows. Q8_0 and Q4_0 use ggml's block layouts over 32 values
// (Q8_0: fp16 scale + 32 int8 = 34 bytes; Q4_0: fp16 scale + 16 bytes of nibbles = 18 bytes),
// quantized per head row and dequantized inside attention.
enum class KvType { F32, F16, Q8_0, Q4_0 };
inline constexpr int64_t kKvQuantBlock = 32;

struct KvTypeInfo {
    KvType kind;
    std::string_view name;  // "q8_0"
    std::string_view label;
    std::string_view description;
    int64_t block_elems;  // values stored together (1, or kKvQuantBlock when quantized)
    size_t block_bytes;   // bytes of one block
    bool quantized() const { return block_elems > 1; }
};

std::span<const KvTypeInfo> kv_types();
const KvTypeInfo& kv_type_info(KvType t);
std::string_view kv_type_name(KvType t);  // "f32", "f16", "q8_0", "q4_0"
std::optional<KvType> parse_kv_type(std::string_view name);
bool kv_type_quantized(KvType t);

// The types of a cache's keys and of its values, which may differ (llama.cpp's --cache-type-k and
// --cache-type-v): keys feed q·k and the softmax, so they are the more sensitive half (`fluoro
// eval kv` measures each). A single KvType converts implicitly to "both".
struct KvTypes {
    KvType k = KvType::F16;
    KvType v = KvType::F16;
    constexpr KvTypes() = default;
    constexpr KvTypes(KvType both) : k(both), v(both) {}  // NOLINT(google-explicit-constructor)
    constexpr KvTypes(KvType keys, KvType values) : k(keys), v(values) {}
    bool operator==(const KvTypes&) const = default;
    bool same() const { return k == v; }
};
// "q8_0" when keys and values share the type; else "q8_0/f16" (keys / values).
std::string kv_types_name(KvTypes t);
// Parses what kv_types_name writes (Error-free: nullopt for anything else).
std::optional<KvTypes> parse_kv_types(std::string_view name);

// ---- Attention implementation (backend/attention_capture.h) ----

// Standard: scores of a query row materialized, softmax, weighted sum. Flash: keys in tiles with
// an online softmax (running max and sum, one division at the end); only a tile of scores alive.
enum class AttentionImpl { Standard, Flash };
// The implementation a model load uses unless told otherwise (the faster decode at short context
// on the machines measured, docs/PERFORMANCE.md "Attention: standard vs flash").
inline constexpr AttentionImpl kDefaultAttentionImpl = AttentionImpl::Flash;

struct AttentionImplInfo {
    AttentionImpl kind;
    std::string_view name;  // "flash"
    std::string_view label;
    std::string_view description;
};

std::span<const AttentionImplInfo> attention_impls();
const AttentionImplInfo& attention_impl_info(AttentionImpl a);
std::string_view attention_impl_name(AttentionImpl a);  // "standard", "flash"
std::optional<AttentionImpl> parse_attention_impl(std::string_view name);

// ---- Multi-head latent attention path (model/arch_deepseek2.cpp) ----

// Absorbed: attention computed in the latent space, one cached row per token of RoPE dims +
// latent. Naive: every head's key and value up-projected and cached, ordinary attention. Other
// architectures than deepseek2 ignore it.
enum class MlaPath { Absorbed, Naive };

struct MlaPathInfo {
    MlaPath kind;
    std::string_view name;  // "absorbed"
    std::string_view label;
    std::string_view description;
};

std::span<const MlaPathInfo> mla_paths();
std::string_view mla_path_name(MlaPath p);  // "absorbed", "naive"
std::optional<MlaPath> parse_mla_path(std::string_view name);

// ---- Backend (backend/backend_kind.h) ----

enum class BackendKind { Cpu, Cuda };

struct BackendKindInfo {
    BackendKind kind;
    std::string_view name;  // "cuda"
    std::string_view label;
    std::string_view description;
};

std::span<const BackendKindInfo> backend_kinds();
const BackendKindInfo& backend_kind_info(BackendKind k);
std::string_view backend_kind_name(BackendKind k);  // "cpu", "cuda"
std::optional<BackendKind> parse_backend_kind(std::string_view name);

// ---- Telemetry level (telemetry/, changeable at any moment: the next step uses it) ----

enum class TelemetryLevel { Off, Summary, Full, Trace };  // each includes the ones before

struct TelemetryLevelInfo {
    TelemetryLevel kind;
    std::string_view name;  // "summary"
    std::string_view label;
    std::string_view description;
};

std::span<const TelemetryLevelInfo> telemetry_levels();
const TelemetryLevelInfo& telemetry_level_info(TelemetryLevel level);
std::string_view telemetry_level_name(TelemetryLevel level);
// "off", "summary", "full"; nullopt for anything else.
std::optional<TelemetryLevel> parse_telemetry_level(std::string_view text);

// ---- Speculative drafter (speculative/spec_settings.h) ----

enum class SpecMode { Off, PromptLookup, DraftModel, SelfSpeculative };

struct SpecModeInfo {
    SpecMode kind;
    std::string_view name;   // "prompt_lookup"
    std::string_view alias;  // another accepted name ("ngram"), or empty
    std::string_view label;
    std::string_view description;
    bool drafts;             // uses max_draft (and adaptive)
    bool needs_draft_model;  // SpeculativeSettings::draft_model
    bool uses_exit_layer;    // SpeculativeSettings::exit_layer
    bool uses_confidence;    // SpeculativeSettings::draft_p_min
    bool uses_ngram;         // SpeculativeSettings::ngram_max
};

std::span<const SpecModeInfo> spec_modes();
const SpecModeInfo& spec_mode_info(SpecMode m);
// "off", "prompt_lookup", "draft_model", "self_speculative"
std::string_view spec_mode_name(SpecMode m);
std::optional<SpecMode> parse_spec_mode(std::string_view name);  // also "none", "ngram", "self"

// ---- Helpers over any of the lists ----

// The items' names joined for a help text or an error message: "a, b or c" by default; "a, b, c"
// with last = ", "; "a,b,c" (a CLI list) with sep = last = ",".
template <typename Info>
std::string setting_names(std::span<const Info> list, std::string_view sep = ", ",
                          std::string_view last = " or ") {
    std::string out;
    for (size_t i = 0; i < list.size(); ++i) {
        if (i > 0) out += i + 1 == list.size() ? last : sep;
        out += list[i].name;
    }
    return out;
}

// Each item as "name (description)", joined by "; ": a help text that says what each choice does.
template <typename Info>
std::string setting_help(std::span<const Info> list) {
    std::string out;
    for (const Info& i : list) {
        if (!out.empty()) out += "; ";
        out += std::string(i.name) + " (" + std::string(i.description) + ")";
    }
    return out;
}

}  // namespace fluoro
