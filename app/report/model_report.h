// `fluoro info`: a report of a GGUF model — architecture, hyperparameters, tokenizer, special
// tokens, chat template, tensor table, sizes — as aligned text or as JSON (for scripts and tests).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace fluoro::app {

struct ReportOptions {
    bool tensors = true;   // include the per-tensor table
};

// Both throw fluoro::Error (with the file and the reason) when the model cannot be read.
nlohmann::json model_report_json(const std::filesystem::path& model, const ReportOptions& opt);
std::string model_report_text(const nlohmann::json& report);

}  // namespace fluoro::app
