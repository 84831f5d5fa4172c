#include "cli/engine_flags.h"

#include "core/error.h"

namespace fluoro::cli {

void EngineFlags::add_to(CLI::App& cmd) {
    cmd.add_option("-t,--threads", engine.threads, "CPU threads (default: physical cores)");
    cmd.add_option("-c,--ctx", engine.ctx, "Context size in tokens")->capture_default_str();
    cmd.add_option("-b,--batch", engine.batch, "Tokens per prefill step")->capture_default_str();
    cmd.add_option("--kv-type", kv_type, "KV cache element type: f16 or f32")
        ->capture_default_str();
}

app::EngineSettings EngineFlags::settings() const {
    app::EngineSettings s = engine;
    if (kv_type == "f16")
        s.kv_type = KvType::F16;
    else if (kv_type == "f32")
        s.kv_type = KvType::F32;
    else
        throw Error("--kv-type must be f16 or f32, not '" + kv_type + "'");
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
