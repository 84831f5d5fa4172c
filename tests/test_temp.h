// Scratch files for tests. ctest runs tests in parallel processes (scripts/test.sh: -j), and a
// fixed name under the temp directory is then shared: one test rewrites a model file that another
// has memory-mapped (SIGBUS, or "modified on disk while loaded"). Every name is made unique to the
// process, and each discovered test runs in a process of its own.
#pragma once

#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <string_view>

namespace fluoro::test {

// testing::TempDir() / "<pid>-<name>".
inline std::filesystem::path unique_temp_path(std::string_view name) {
    std::string file = std::to_string(::getpid());
    file += '-';
    file += name;
    return std::filesystem::path(testing::TempDir()) / file;
}

}  // namespace fluoro::test
