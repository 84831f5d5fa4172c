// The `fluoro` subcommands, one file each; main.cpp wires them into CLI11.
#pragma once

#include <CLI/CLI.hpp>

namespace fluoro::cli {

void add_info_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_chat_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_bench_spec_command(CLI::App& bench);   // `fluoro bench spec` (cmd_bench_spec.cpp)
void add_bench_cache_command(CLI::App& bench);  // `fluoro bench cache` (cmd_bench_cache.cpp)
void add_ppl_command(CLI::App& app);
void add_sessions_command(CLI::App& app);
void add_trace_command(CLI::App& app);
void add_attn_command(CLI::App& app);
void add_lens_command(CLI::App& app);            // logit lens (cmd_lens.cpp)
void add_eval_command(CLI::App& app);            // `fluoro eval kv` (cmd_eval_kv.cpp)
void add_eval_claims_command(CLI::App& eval);    // `fluoro eval claims` (cmd_eval_claims.cpp)
void add_eval_fidelity_command(CLI::App& eval);  // `fluoro eval fidelity` (cmd_eval_fidelity.cpp)
void add_eval_attn_command(CLI::App& eval);      // `fluoro eval attn` (cmd_eval_attn.cpp)
void add_serve_command(CLI::App& app);           // OpenAI-compatible HTTP server (cmd_serve.cpp)
void add_cache_command(CLI::App& app);           // `fluoro cache advise` (cmd_cache.cpp)
void add_compare_command(CLI::App& app);         // `fluoro compare A B` (cmd_compare.cpp)
void add_profile_command(CLI::App& app);         // `fluoro profile MODEL` (cmd_profile.cpp)
void add_convert_command(CLI::App& app);         // `fluoro convert IN OUT` (cmd_convert.cpp)

}  // namespace fluoro::cli
