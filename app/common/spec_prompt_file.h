// `fluoro bench spec --prompts FILE`: the user's own prompt sets, one JSON object per line —
//   {"category": "copy", "text": "Fix the typos: ...", "reference": "a correct answer"}
// "text" is required (a non-empty string); "category" defaults to "custom"; "reference"
// (optional) is a correct answer, whose copied fraction the report prints beside the model's.
// Blank lines and lines starting with '#' are skipped. Errors name the file, the line and what is
// wrong; nothing is half-read.
#pragma once

#include <filesystem>
#include <string_view>
#include <vector>

#include "eval/spec_bench_prompts.h"

namespace fluoro::app {

// `source` names the text in errors (the file's path).
std::vector<spec::BenchPrompt> parse_spec_prompts(std::string_view text, std::string_view source);
std::vector<spec::BenchPrompt> read_spec_prompts(const std::filesystem::path& path);

}  // namespace fluoro::app
