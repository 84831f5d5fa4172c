#include "cli/kv_policy_flags.h"

#include "core/error.h"

namespace fluoro::cli {

std::string kv_recent_help() {
    std::string defaults;
    for (const KvPolicyInfo& p : kv_policies()) {
        if (!p.recent_setting) continue;
        if (!defaults.empty()) defaults += "; ";
        defaults += std::string(p.name) + ": " + std::string(p.default_recent_text);
    }
    return "Recent tokens never evicted, for the policies that read it (0 = their default: " +
           defaults + ")";
}

std::string kv_sinks_help() {
    std::string users;
    for (const KvPolicyInfo& p : kv_policies()) {
        if (!p.uses_sinks) continue;
        if (!users.empty()) users += ", ";
        users += p.name;
    }
    return "First tokens always kept (attention sinks; " + users + ")";
}

void KvPolicyFlags::add_to(CLI::App& cmd) {
    cmd.add_option("--kv-policy", policy,
                   "KV cache policy at the budget: " + setting_help(kv_policies()))
        ->capture_default_str();
    cmd.add_option("--kv-budget", config.budget, "Tokens the KV cache keeps (0 = the context)")
        ->capture_default_str();
    cmd.add_option("--kv-sinks", config.sinks, kv_sinks_help())->capture_default_str();
    cmd.add_option("--kv-recent", config.recent, kv_recent_help())->capture_default_str();
    cmd.add_option("--kv-chunk", config.evict_chunk, "Tokens freed per eviction (0 = budget/16)")
        ->capture_default_str();
}

KvPolicyConfig KvPolicyFlags::parsed() const {
    KvPolicyConfig c = config;
    const std::optional<KvPolicyKind> k = parse_kv_policy(policy);
    if (!k)
        throw Error("--kv-policy must be " + setting_names(kv_policies()) + ", not '" + policy +
                    "'");
    c.kind = *k;
    return c;
}

}  // namespace fluoro::cli
