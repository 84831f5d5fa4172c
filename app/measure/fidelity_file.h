// The reference file `fluoro eval fidelity` reads (tests/reference/fidelity_reference.py writes
// it): "FLFIDEL1", a uint32 length, a JSON header, then the float64 hidden values the engine's
// eval/fidelity.h compares against. Reading checks every size, type and value against the bytes
// present; a damaged or foreign file is an Error naming the file and what is wrong.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "eval/fidelity.h"

namespace fluoro::app {

struct FidelityFile {
    FidelityReference ref;
    std::string model_file, model_sha256, arch, text, generator;
    // llama.cpp's figures against this same reference (tests/reference/make_fidelity_fixtures.py
    // measured them through llama-cpp-python), when the file carries them.
    std::optional<FidelityStats> llama_cpp;
    std::string llama_cpp_version, llama_cpp_settings;
};

FidelityFile read_fidelity_file(const std::filesystem::path& path);

// {"tokens", "fluoro": {...}, "llama.cpp": {...} (when known), "reference": {"ppl"}, "model",
// "reference_file"}; each engine as {"kld_mean", "kld_p99", "kld_max", "top1", "ppl"}.
nlohmann::json fidelity_json(const FidelityStats& ours, const FidelityFile& file);

}  // namespace fluoro::app
