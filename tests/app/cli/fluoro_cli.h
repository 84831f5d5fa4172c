// Runs the built `fluoro` binary (next to this test's directory: build/app/fluoro) with a command
// line and collects its exit status and output, for the CLI's end-to-end tests.
#pragma once

#include <cstdio>
#include <filesystem>
#include <string>

namespace fluoro::test {

inline std::filesystem::path fluoro_binary() {
    const auto self = std::filesystem::read_symlink("/proc/self/exe");
    return self.parent_path().parent_path() / "app" / "fluoro";
}

// The argument quoted for the shell, and a space after it (appending: GCC 12 warns falsely on
// "x" + string).
inline std::string quoted(const std::string& s) {
    std::string q = "'";
    q += s;
    q += "' ";
    return q;
}

struct CliResult {
    int rc = -1;
    std::string out;  // stdout (and stderr)
};

// `fluoro ARGS 2>&1` through the shell (quote paths in ARGS); without with_stderr, stderr is
// dropped (for output to parse, such as --json).
inline CliResult run_fluoro(const std::string& args, bool with_stderr = true) {
    std::string cmd = fluoro_binary().string();
    cmd += ' ';
    cmd += args;
    cmd += with_stderr ? " 2>&1" : " 2>/dev/null";
    CliResult r;
    FILE* pipe = popen(cmd.c_str(), "r");
    if (!pipe) return r;
    char buf[4096];
    while (const size_t n = fread(buf, 1, sizeof buf, pipe)) r.out.append(buf, n);
    r.rc = pclose(pipe);
    return r;
}

}  // namespace fluoro::test
