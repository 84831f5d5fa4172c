// --kv-policy and its parameters for the `fluoro` commands that run a conversation (run, chat):
// the KV cache eviction policy of kv/kv_policy.h, applied through the Engine.
#pragma once

#include <CLI/CLI.hpp>

#include "kv/kv_policy.h"

namespace fluoro::cli {

struct KvPolicyFlags {
    std::string policy{kv_policy_name(KvPolicyConfig{}.kind)};
    KvPolicyConfig config;
    void add_to(CLI::App& cmd);
    KvPolicyConfig parsed() const;  // validates the name (the Engine checks the rest)
    bool enabled() const { return policy != "full" || config.budget > 0; }
};

// The help of a recent-window and a sinks flag, from the engine's policy traits: which policies
// read them and the recent window each keeps by default (KvPolicyInfo::default_recent_text).
std::string kv_recent_help();
std::string kv_sinks_help();

}  // namespace fluoro::cli
