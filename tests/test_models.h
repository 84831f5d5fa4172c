// Locating the real default models for tests. A missing model skips the test with the fetch
// command, except when FLUORO_REQUIRE_MODELS=1 (set by scripts/test.sh, so CI never skips them).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "test_paths.h"

namespace fluoro::test {

inline constexpr const char* kSmolLM2File = "SmolLM2-135M-Instruct.Q4_1.gguf";
inline constexpr const char* kGemma3File = "gemma-3-270m-q4_k_m.gguf";

inline std::filesystem::path models_dir() {
    if (const char* env = std::getenv("FLUORO_MODELS_DIR")) return env;
    return FLUORO_MODELS_DIR;
}

inline std::filesystem::path fixtures_dir() {
    return FLUORO_FIXTURES_DIR;
}

inline bool models_required() {
    const char* env = std::getenv("FLUORO_REQUIRE_MODELS");
    return env && std::string(env) == "1";
}

}  // namespace fluoro::test

// Use at the top of a test body: binds `var` to the model's path, or skips (fails when required).
#define FLUORO_REQUIRE_MODEL(var, file)                                                    \
    const std::filesystem::path var = ::fluoro::test::models_dir() / (file);               \
    if (!std::filesystem::exists(var)) {                                                   \
        if (::fluoro::test::models_required())                                             \
            FAIL() << "model " << var << " missing (FLUORO_REQUIRE_MODELS=1)";             \
        GTEST_SKIP() << "model " << var << " not found; run scripts/fetch-model.sh --all"; \
    }
