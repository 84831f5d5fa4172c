// Shared setup for tests that run the real models: load once per test binary (loading maps the
// file and binds weights; Gemma's tokenizer alone is 262k tokens), CPU backend, 2 threads.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "backend/cpu/cpu_backend.h"
#include "model/model.h"
#include "test_models.h"

namespace fluoro::test {

struct LoadedTestModel {
    std::unique_ptr<cpu::CpuBackend> backend;
    std::unique_ptr<Model> model;
};

// Cached per (file, max_batch, max_logit_rows). Returns nullptr when the file is absent (the
// caller skips or fails through FLUORO_REQUIRE_MODEL first).
inline LoadedTestModel* shared_model(const std::filesystem::path& path, int64_t max_batch = 512,
                                     int64_t max_logit_rows = 1) {
    static std::map<std::string, LoadedTestModel> cache;
    const std::string key =
        path.string() + "#" + std::to_string(max_batch) + "#" + std::to_string(max_logit_rows);
    auto it = cache.find(key);
    if (it != cache.end()) return &it->second;
    if (!std::filesystem::exists(path)) return nullptr;
    LoadedTestModel m;
    m.backend = std::make_unique<cpu::CpuBackend>(2);
    ModelLoadOptions opt;
    opt.max_batch = max_batch;
    opt.max_logit_rows = max_logit_rows;
    m.model = Model::load(path, *m.backend, opt);
    return &cache.emplace(key, std::move(m)).first->second;
}

}  // namespace fluoro::test
