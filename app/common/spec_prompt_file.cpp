#include "common/spec_prompt_file.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "core/error.h"

namespace fluoro::app {
namespace {

// The string member `key` of `obj`, or `fallback` when absent; Error when present but not a
// string.
std::string string_member(const nlohmann::json& obj, const char* key, const std::string& fallback,
                          const std::string& where) {
    const auto it = obj.find(key);
    if (it == obj.end()) return fallback;
    if (!it->is_string()) throw Error(where + ": \"" + key + "\" must be a string");
    return it->get<std::string>();
}

}  // namespace

std::vector<spec::BenchPrompt> parse_spec_prompts(std::string_view text, std::string_view source) {
    std::vector<spec::BenchPrompt> prompts;
    std::istringstream in{std::string(text)};
    std::string line;
    for (int64_t number = 1; std::getline(in, line); ++number) {
        const std::string where = std::string(source) + ":" + std::to_string(number);
        const size_t first = line.find_first_not_of(" \t\r");
        if (first == std::string::npos || line[first] == '#') continue;
        const nlohmann::json obj = nlohmann::json::parse(line, nullptr, false);
        if (obj.is_discarded())
            throw Error(where + ": not valid JSON (one object per line: {\"category\": ..., " +
                        "\"text\": ..., \"reference\": ...})");
        if (!obj.is_object()) throw Error(where + ": expected a JSON object");
        if (!obj.contains("text")) throw Error(where + ": \"text\" (the prompt) is missing");
        spec::BenchPrompt p;
        p.text = string_member(obj, "text", "", where);
        if (p.text.empty()) throw Error(where + ": \"text\" is empty");
        p.category = string_member(obj, "category", "custom", where);
        if (p.category.empty()) throw Error(where + ": \"category\" is empty");
        p.reference = string_member(obj, "reference", "", where);
        prompts.push_back(std::move(p));
    }
    if (prompts.empty())
        throw Error(std::string(source) + ": no prompts (one JSON object per line, with \"text\")");
    return prompts;
}

std::vector<spec::BenchPrompt> read_spec_prompts(const std::filesystem::path& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw Error("bench spec: cannot open the prompts file " + path.string());
    std::ostringstream text;
    text << f.rdbuf();
    if (f.bad()) throw Error("bench spec: cannot read the prompts file " + path.string());
    return parse_spec_prompts(text.str(), path.string());
}

}  // namespace fluoro::app
