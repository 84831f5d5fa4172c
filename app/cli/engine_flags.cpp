#include "cli/engine_flags.h"

#include <optional>

#include "core/error.h"
#include "settings/settings.h"

namespace fluoro::cli {
namespace {

// Each drafter with what it does and the flags it reads (the engine's SpecModeInfo traits).
std::string spec_help() {
    std::string out;
    for (const SpecModeInfo& m : spec_modes()) {
        if (!out.empty()) out += "; ";
        out += std::string(m.name) + " (" + std::string(m.description);
        if (m.needs_draft_model) out += "; --draft-model";
        if (m.uses_exit_layer) out += "; --exit-layer";
        if (m.uses_ngram) out += "; --ngram-max";
        out += ")";
    }
    return out;
}

}  // namespace

void EngineFlags::add_to(CLI::App& cmd) {
    cmd.add_option("--backend", backend, "Backend: " + setting_help(backend_kinds()))
        ->capture_default_str();
    cmd.add_option("-t,--threads", engine.threads, "CPU threads (default: physical cores)");
    cmd.add_option("-c,--ctx", engine.ctx, "Context size in tokens")->capture_default_str();
    cmd.add_option("-b,--batch", engine.batch, "Tokens per prefill step")->capture_default_str();
    cmd.add_option("--kv-type", kv_type,
                   "KV cache element type, keys and values: " + setting_help(kv_types()))
        ->capture_default_str();
    cmd.add_option("--kv-type-k", kv_type_k,
                   "Element type of the cached keys only (default: --kv-type's); keys feed q·k, "
                   "so they are the half quantization hurts more");
    cmd.add_option("--kv-type-v", kv_type_v,
                   "Element type of the cached values only (default: --kv-type's)");
    cmd.add_option("--attention", attention,
                   "Attention implementation: " + setting_help(attention_impls()))
        ->capture_default_str();
    cmd.add_option("--mla", mla,
                   "Multi-head latent attention models (deepseek2): " + setting_help(mla_paths()))
        ->capture_default_str();
    cmd.add_option("--prefix-cache", engine.prefix_cache_slots,
                   "Prompt prefixes kept for reuse across conversations (0: off)")
        ->capture_default_str()
        ->check(CLI::Range(int64_t(0), int64_t(64)));
    cmd.add_option("--prefix-cache-file", engine.prefix_cache_file,
                   "Keep the prefix cache in this file across restarts: restored at start when it "
                   "was made with this model file (SHA-256), KV type and backend; saved after "
                   "runs (at most every 30 s) and at exit. Needs --prefix-cache > 0");
    cmd.add_flag("--swa-full", engine.swa_full,
                 "Sliding-window layers store every token instead of only their window (they do "
                 "anyway with --prefix-cache-file, an evicting KV policy or --backend cuda)");
}

app::EngineSettings EngineFlags::settings() const {
    app::EngineSettings s = engine;
    const std::optional<BackendKind> b = parse_backend_kind(backend);
    if (!b)
        throw Error("--backend must be " + setting_names(backend_kinds()) + ", not '" + backend +
                    "'");
    s.backend = *b;
    const auto kv = [](const std::string& flag, const std::string& name) {
        const std::optional<KvType> t = parse_kv_type(name);
        if (!t)
            throw Error(flag + " must be " + setting_names(kv_types()) + ", not '" + name + "'");
        return *t;
    };
    const KvType both = kv("--kv-type", kv_type);
    s.kv_type = KvTypes{kv_type_k.empty() ? both : kv("--kv-type-k", kv_type_k),
                        kv_type_v.empty() ? both : kv("--kv-type-v", kv_type_v)};
    const std::optional<AttentionImpl> impl = parse_attention_impl(attention);
    if (!impl)
        throw Error("--attention must be " + setting_names(attention_impls()) + ", not '" +
                    attention + "'");
    s.attention = *impl;
    const std::optional<MlaPath> path = parse_mla_path(mla);
    if (!path) throw Error("--mla must be " + setting_names(mla_paths()) + ", not '" + mla + "'");
    s.mla = *path;
    return s;
}

void SpecFlags::add_to(CLI::App& cmd) {
    cmd.add_option("--spec", mode, "Speculative decoding: " + spec_help())->capture_default_str();
    cmd.add_option("--draft-model", settings.draft_model, "Draft GGUF for --spec draft_model");
    cmd.add_option("--draft-max", settings.max_draft, "Tokens drafted per step at most")
        ->capture_default_str();
    cmd.add_option("--exit-layer", settings.exit_layer,
                   "Layers the self-speculative draft runs (0 = half)")
        ->capture_default_str();
    cmd.add_option("--ngram-max", settings.ngram_max, "Prompt lookup: longest n-gram matched")
        ->capture_default_str();
    cmd.add_option("--draft-p-min", settings.draft_p_min,
                   "draft_model / self_speculative: stop drafting where the draft's most likely "
                   "token has less than this probability (0 = off)")
        ->capture_default_str();
}

SpeculativeSettings SpecFlags::parsed() const {
    SpeculativeSettings s = settings;
    const std::optional<SpecMode> m = parse_spec_mode(mode);
    if (!m) throw Error("--spec must be " + setting_names(spec_modes()) + ", not '" + mode + "'");
    s.mode = *m;
    s.validate();
    return s;
}

void SamplingFlags::add_to(CLI::App& cmd) {
    cmd.add_option("--temp", params.temperature, "Temperature (0 = greedy)")->capture_default_str();
    cmd.add_option("--top-k", params.top_k, "Top-k (0 = off)")->capture_default_str();
    cmd.add_option("--top-p", params.top_p, "Top-p (1 = off)")->capture_default_str();
    cmd.add_option("--min-p", params.min_p, "Min-p (0 = off)")->capture_default_str();
    cmd.add_option("--repeat-penalty", params.repeat_penalty, "Repetition penalty (1 = off)")
        ->capture_default_str();
    cmd.add_option("--repeat-last-n", params.repeat_last_n,
                   "Tokens the penalties look back (-1 = all)")
        ->capture_default_str();
    cmd.add_option("--frequency-penalty", params.frequency_penalty)->capture_default_str();
    cmd.add_option("--presence-penalty", params.presence_penalty)->capture_default_str();
    cmd.add_option("-s,--seed", params.seed, "Random seed")->capture_default_str();
}

}  // namespace fluoro::cli
