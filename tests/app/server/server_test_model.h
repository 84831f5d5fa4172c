// The small seeded model the in-process server tests load (written once per test process).
#pragma once

#include <filesystem>

#include "gguf/test_model.h"
#include "test_temp.h"

namespace fluoro::app::test_support {

inline std::filesystem::path server_tiny_model() {
    const auto path = test::unique_temp_path("server_tiny.gguf");
    if (!std::filesystem::exists(path)) {
        gguf::TestModelSpec spec;
        spec.n_ctx = 4096;
        gguf::write_test_model(path, spec);
    }
    return path;
}

// A wider, deeper one (~1 ms a token on one thread): generations that last seconds, for clients
// that must hang up while the engine is still generating.
inline std::filesystem::path server_slow_model() {
    const auto path = test::unique_temp_path("server_slow.gguf");
    if (!std::filesystem::exists(path)) {
        gguf::TestModelSpec spec;
        spec.n_embd = 256;
        spec.n_layer = 8;
        spec.n_head = 8;
        spec.n_head_kv = 4;
        spec.n_ff = 768;
        spec.n_ctx = 4096;
        gguf::write_test_model(path, spec);
    }
    return path;
}

}  // namespace fluoro::app::test_support
