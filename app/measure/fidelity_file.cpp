#include "measure/fidelity_file.h"

#include <array>
#include <bit>
#include <climits>
#include <cmath>
#include <cstring>
#include <fstream>

#include "core/error.h"

namespace fluoro::app {
namespace {

constexpr std::array<char, 8> kMagic{'F', 'L', 'F', 'I', 'D', 'E', 'L', '1'};
constexpr uint64_t kMaxHeader = 64ull << 20;  // the token windows of a few hundred thousand ids

[[noreturn]] void bad(const std::filesystem::path& path, const std::string& what) {
    throw Error("fidelity reference '" + path.string() + "': " + what);
}

const nlohmann::json& member(const std::filesystem::path& path, const nlohmann::json& j,
                             const char* key) {
    const auto it = j.find(key);
    if (it == j.end()) bad(path, std::string("the header has no '") + key + "'");
    return *it;
}

int64_t positive(const std::filesystem::path& path, const nlohmann::json& j, const char* key) {
    const nlohmann::json& v = member(path, j, key);
    if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > (1 << 24))
        bad(path, std::string("'") + key + "' must be a positive integer, not " + v.dump());
    return v.get<int64_t>();
}

std::string text_or_empty(const nlohmann::json& j, const char* key) {
    const auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

double number(const std::filesystem::path& path, const nlohmann::json& j, const char* key) {
    const nlohmann::json& v = member(path, j, key);
    if (!v.is_number() || !std::isfinite(v.get<double>()))
        bad(path, std::string("'") + key + "' must be a finite number, not " + v.dump());
    return v.get<double>();
}

nlohmann::json stats_json(const FidelityStats& s) {
    return {{"kld_mean", s.kld_mean},
            {"kld_p99", s.kld_p99},
            {"kld_max", s.kld_max},
            {"top1", s.top1},
            {"ppl", s.ppl}};
}

}  // namespace

FidelityFile read_fidelity_file(const std::filesystem::path& path) {
    static_assert(std::endian::native == std::endian::little, "the file is little-endian");
    std::ifstream in(path, std::ios::binary);
    if (!in) bad(path, "cannot be read");
    in.seekg(0, std::ios::end);
    const uint64_t size = uint64_t(in.tellg());
    in.seekg(0);
    std::array<char, 8> magic{};
    uint32_t header_len = 0;
    if (size < 12 || !in.read(magic.data(), 8) ||
        !in.read(reinterpret_cast<char*>(&header_len), 4) || magic != kMagic)
        bad(path, "not a fidelity reference (it does not start with FLFIDEL1)");
    if (header_len > kMaxHeader || 12 + uint64_t(header_len) > size)
        bad(path, "its header claims " + std::to_string(header_len) + " bytes of " +
                      std::to_string(size) + " in the file");
    std::string text(header_len, '\0');
    if (!in.read(text.data(), header_len)) bad(path, "the header cannot be read");
    nlohmann::json h;
    try {
        h = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        bad(path, std::string("the header is not JSON (") + e.what() + ")");
    }
    if (!h.is_object()) bad(path, "the header is not a JSON object");
    const nlohmann::json& format = member(path, h, "format");
    if (format != 1) bad(path, "format " + format.dump() + " (this build reads format 1)");

    FidelityFile f;
    FidelityReference& r = f.ref;
    r.n_ctx = positive(path, h, "n_ctx");
    r.first_scored = positive(path, h, "first_scored");
    r.n_embd = positive(path, h, "n_embd");
    const int64_t rows = positive(path, h, "rows");
    if (r.first_scored >= r.n_ctx - 1)
        bad(path, "it scores from position " + std::to_string(r.first_scored) + " of windows of " +
                      std::to_string(r.n_ctx));
    const nlohmann::json& windows = member(path, h, "chunks");
    if (!windows.is_array() || windows.empty()) bad(path, "'chunks' must be a non-empty array");
    for (const nlohmann::json& w : windows) {
        if (!w.is_array() || int64_t(w.size()) != r.n_ctx)
            bad(path, "window " + std::to_string(r.windows.size()) + " is not " +
                          std::to_string(r.n_ctx) + " token ids");
        std::vector<int32_t>& ids = r.windows.emplace_back();
        for (const nlohmann::json& t : w) {
            if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > INT32_MAX)
                bad(path, "window " + std::to_string(r.windows.size() - 1) +
                              " holds a token id that is not one: " + t.dump());
            ids.push_back(int32_t(t.get<int64_t>()));
        }
    }
    if (rows != int64_t(r.windows.size()) * r.scored_per_window())
        bad(path, std::to_string(rows) + " rows for " + std::to_string(r.windows.size()) +
                      " windows of " + std::to_string(r.scored_per_window()) + " scored positions");
    const uint64_t want = uint64_t(rows) * uint64_t(r.n_embd) * sizeof(double);
    if (size - 12 - header_len != want)
        bad(path, "it holds " + std::to_string(size - 12 - header_len) +
                      " bytes of hidden values, not " + std::to_string(want) + " (" +
                      std::to_string(rows) + " x " + std::to_string(r.n_embd) + " float64)");
    r.hidden.resize(size_t(rows * r.n_embd));
    if (!in.read(reinterpret_cast<char*>(r.hidden.data()), std::streamsize(want)))
        bad(path, "the hidden values cannot be read");
    for (size_t i = 0; i < r.hidden.size(); ++i)
        if (!std::isfinite(r.hidden[i]))
            bad(path, "hidden value " + std::to_string(i) + " is not a finite number");

    const nlohmann::json& check = member(path, h, "check");
    if (!check.is_object()) bad(path, "'check' must be an object");
    const nlohmann::json& ids = member(path, check, "ids");
    const nlohmann::json& logits = member(path, check, "logits");
    if (!ids.is_array() || !logits.is_array() || ids.empty() || ids.size() != logits.size())
        bad(path, "'check' must hold as many 'ids' as 'logits'");
    for (size_t i = 0; i < ids.size(); ++i) {
        if (!ids[i].is_number_integer() || ids[i].get<int64_t>() < 0 ||
            ids[i].get<int64_t>() > INT32_MAX || !logits[i].is_number() ||
            !std::isfinite(logits[i].get<double>()))
            bad(path, "'check' entry " + std::to_string(i) + " is not a token id and a logit");
        r.check_ids.push_back(int32_t(ids[i].get<int64_t>()));
        r.check_logits.push_back(logits[i].get<double>());
    }
    r.check_logsumexp = number(path, check, "logsumexp");

    f.model_file = text_or_empty(h, "model_file");
    f.model_sha256 = text_or_empty(h, "model_sha256");
    f.arch = text_or_empty(h, "arch");
    f.text = text_or_empty(h, "text");
    f.generator = text_or_empty(h, "generator");
    if (const auto peer = h.find("llama.cpp"); peer != h.end()) {
        if (!peer->is_object()) bad(path, "'llama.cpp' must be an object");
        FidelityStats s;
        s.tokens = rows;
        s.kld_mean = number(path, *peer, "kld_mean");
        s.kld_p99 = number(path, *peer, "kld_p99");
        s.kld_max = number(path, *peer, "kld_max");
        s.top1 = number(path, *peer, "top1");
        s.ppl = number(path, *peer, "ppl");
        f.llama_cpp = s;
        f.llama_cpp_version = text_or_empty(*peer, "version");
        f.llama_cpp_settings = text_or_empty(*peer, "settings");
    }
    return f;
}

nlohmann::json fidelity_json(const FidelityStats& ours, const FidelityFile& file) {
    nlohmann::json j = {{"tokens", ours.tokens},
                        {"fluoro", stats_json(ours)},
                        {"reference", {{"ppl", ours.ppl_reference}}},
                        {"model", file.model_file},
                        {"seconds", ours.ms / 1000.0}};
    if (file.llama_cpp) {
        j["llama.cpp"] = stats_json(*file.llama_cpp);
        j["llama.cpp"]["version"] = file.llama_cpp_version;
        j["llama.cpp"]["settings"] = file.llama_cpp_settings;
    }
    return j;
}

}  // namespace fluoro::app
