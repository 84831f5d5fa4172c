#include "cli/engine_flags.h"

#include <optional>

#include "core/error.h"
#include "kv/kv_cache.h"

namespace fluoro::cli {

void EngineFlags::add_to(CLI::App& cmd) {
    cmd.add_option("--backend", backend, "Backend: cpu or cuda (an NVIDIA GPU)")
        ->capture_default_str();
    cmd.add_option("-t,--threads", engine.threads, "CPU threads (default: physical cores)");
    cmd.add_option("-c,--ctx", engine.ctx, "Context size in tokens")->capture_default_str();
    cmd.add_option("-b,--batch", engine.batch, "Tokens per prefill step")->capture_default_str();
    cmd.add_option("--kv-type", kv_type, "KV cache element type: f32, f16, q8_0 or q4_0")
        ->capture_default_str();
    cmd.add_option("--attention", attention, "Attention implementation: flash or standard")
        ->capture_default_str();
    cmd.add_option("--prefix-cache", engine.prefix_cache_slots,
                   "Prompt prefixes kept for reuse across conversations (0: off)")
        ->capture_default_str()
        ->check(CLI::Range(int64_t(0), int64_t(64)));
    cmd.add_option("--prefix-cache-file", engine.prefix_cache_file,
                   "Keep the prefix cache in this file across restarts: restored at start when it "
                   "was made with this model file (SHA-256), KV type and backend; saved after "
                   "runs (at most every 30 s) and at exit. Needs --prefix-cache > 0");
}

app::EngineSettings EngineFlags::settings() const {
    app::EngineSettings s = engine;
    const std::optional<BackendKind> b = parse_backend_kind(backend);
    if (!b) throw Error("--backend must be cpu or cuda, not '" + backend + "'");
    s.backend = *b;
    const std::optional<KvType> kv = parse_kv_type(kv_type);
    if (!kv) throw Error("--kv-type must be f32, f16, q8_0 or q4_0, not '" + kv_type + "'");
    s.kv_type = *kv;
    const std::optional<AttentionImpl> impl = parse_attention_impl(attention);
    if (!impl) throw Error("--attention must be flash or standard, not '" + attention + "'");
    s.attention = *impl;
    return s;
}

void SpecFlags::add_to(CLI::App& cmd) {
    cmd.add_option("--spec", mode,
                   "Speculative decoding: off, prompt_lookup, draft_model (--draft-model), "
                   "self_speculative (--exit-layer)")
        ->capture_default_str();
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
    if (!m)
        throw Error("--spec must be off, prompt_lookup, draft_model or self_speculative, not '" +
                    mode + "'");
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
