// `fluoro bench cache MODEL`: the prompt-cache benchmark. It is a Python script
// (scripts/bench_cache.py) that drives `fluoro serve` through the real `openai` client, so this
// command only finds the script and replaces itself with `python3 SCRIPT --fluoro THIS_BINARY`.
// The script is looked for under $FLUORO_ROOT, next to an installed binary
// (../share/fluoroscope/scripts) and in the source tree this binary was built from.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/error.h"

#ifndef FLUORO_SOURCE_DIR
#define FLUORO_SOURCE_DIR ""
#endif

namespace fluoro::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kScript = "bench_cache.py";

struct CacheBenchFlags {
    std::string model, modes = "on,off,breaker,restart", python = "python3";
    int conversations = 20, turns = 4, threads = 0, slots = 0, ctx = 8192, max_tokens = 12,
        seed = 1;
    bool json = false, quick = false;
};

fs::path self_exe() {
    std::error_code ec;
    fs::path p = fs::read_symlink("/proc/self/exe", ec);
    if (ec) throw Error("cannot resolve /proc/self/exe: " + ec.message());
    return p;
}

// The first existing candidate; the error lists every place looked at.
fs::path find_script(const fs::path& exe) {
    std::vector<fs::path> candidates;
    if (const char* root = std::getenv("FLUORO_ROOT"); root != nullptr && *root != '\0')
        candidates.push_back(fs::path(root) / "scripts" / kScript);
    candidates.push_back(exe.parent_path() / ".." / "share" / "fluoroscope" / "scripts" / kScript);
    if (*FLUORO_SOURCE_DIR != '\0')
        candidates.push_back(fs::path(FLUORO_SOURCE_DIR) / "scripts" / kScript);
    std::string looked;
    for (const fs::path& c : candidates) {
        std::error_code ec;
        if (fs::is_regular_file(c, ec)) return fs::weakly_canonical(c, ec);
        looked += "\n  " + c.lexically_normal().string();
    }
    throw Error(std::string("the prompt-cache benchmark script ") + kScript +
                " was not found; looked in:" + looked +
                "\nset FLUORO_ROOT to a Fluoroscope source tree (the script is scripts/" + kScript +
                ")");
}

[[noreturn]] void run_script(const CacheBenchFlags& o) {
    const fs::path exe = self_exe();
    const fs::path script = find_script(exe);
    std::vector<std::string> args = {o.python,          script.string(),
                                     "--fluoro",        exe.string(),
                                     "--model",         o.model,
                                     "--conversations", std::to_string(o.conversations),
                                     "--turns",         std::to_string(o.turns),
                                     "--threads",       std::to_string(o.threads),
                                     "--modes",         o.modes,
                                     "--slots",         std::to_string(o.slots),
                                     "--ctx",           std::to_string(o.ctx),
                                     "--max-tokens",    std::to_string(o.max_tokens),
                                     "--seed",          std::to_string(o.seed)};
    if (o.json) args.emplace_back("--json");
    if (o.quick) args.emplace_back("--quick");
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::cout.flush();
    std::cerr.flush();
    ::execvp(argv[0], argv.data());
    throw Error("cannot run " + o.python + " " + script.string() + ": " + std::strerror(errno) +
                " (the benchmark needs Python 3 with the openai package)");
}

}  // namespace

void add_bench_cache_command(CLI::App& bench) {
    auto* cmd = bench.add_subcommand(
        "cache",
        "Measure the prompt cache of `fluoro serve`: an agent workload with the cache on, off and "
        "defeated by a changing system prompt (scripts/bench_cache.py, needs python3 + openai)");
    auto o = std::make_shared<CacheBenchFlags>();
    cmd->add_option("model", o->model, "GGUF model file")->required();
    cmd->add_option("--conversations", o->conversations, "Conversations, interleaved")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    cmd->add_option("--turns", o->turns, "Requests per conversation")
        ->capture_default_str()
        ->check(CLI::Range(1, 64));
    cmd->add_option("-t,--threads", o->threads, "serve's CPU threads (0: its default)")
        ->capture_default_str();
    cmd->add_option(
           "--modes", o->modes,
           "Comma-separated: on, off, breaker, restart (across a --prefix-cache-file restart)")
        ->capture_default_str();
    cmd->add_option("--slots", o->slots,
                    "--prefix-cache slots for on and breaker (0: conversations + 1, at most 64)")
        ->capture_default_str();
    cmd->add_option("-c,--ctx", o->ctx, "serve's context size")->capture_default_str();
    cmd->add_option("-n,--max-tokens", o->max_tokens, "Tokens per reply")->capture_default_str();
    cmd->add_option("-s,--seed", o->seed, "Workload seed")->capture_default_str();
    cmd->add_flag("--json", o->json, "Print JSON");
    cmd->add_flag("--quick", o->quick, "Small workload (2 conversations x 2 turns) for tests");
    cmd->add_option("--python", o->python, "Python 3 interpreter with the openai package")
        ->capture_default_str();
    cmd->callback([o] { run_script(*o); });
}

}  // namespace fluoro::cli
