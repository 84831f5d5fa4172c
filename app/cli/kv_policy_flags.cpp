#include "cli/kv_policy_flags.h"

#include "core/error.h"

namespace fluoro::cli {

void KvPolicyFlags::add_to(CLI::App& cmd) {
    cmd.add_option("--kv-policy", policy,
                   "KV cache policy at the budget: full (stop), window, streaming (sinks + "
                   "window), h2o, scissorhands, snapkv")
        ->capture_default_str();
    cmd.add_option("--kv-budget", config.budget, "Tokens the KV cache keeps (0 = the context)")
        ->capture_default_str();
    cmd.add_option("--kv-sinks", config.sinks, "First tokens always kept (attention sinks)")
        ->capture_default_str();
    cmd.add_option("--kv-recent", config.recent, "Recent tokens never evicted (0 = budget/4)")
        ->capture_default_str();
    cmd.add_option("--kv-chunk", config.evict_chunk, "Tokens freed per eviction (0 = budget/16)")
        ->capture_default_str();
}

KvPolicyConfig KvPolicyFlags::parsed() const {
    KvPolicyConfig c = config;
    const std::optional<KvPolicyKind> k = parse_kv_policy(policy);
    if (!k)
        throw Error(
            "--kv-policy must be full, window, streaming, h2o, scissorhands or snapkv, "
            "not '" +
            policy + "'");
    c.kind = *k;
    return c;
}

}  // namespace fluoro::cli
