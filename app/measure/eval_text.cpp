#include "measure/eval_text.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "model/model.h"

namespace fluoro::app {
namespace {

std::string bible_text() {
    const std::string cmd = std::string("bible -f ") + kBibleRange + " 2>/dev/null";
    FILE* pipe = popen(cmd.c_str(), "r");
    std::string raw;
    if (pipe) {
        char buf[65536];
        while (const size_t n = fread(buf, 1, sizeof buf, pipe)) raw.append(buf, n);
        if (pclose(pipe) != 0) raw.clear();
    }
    if (raw.empty())
        throw Error(
            "no text file given and `bible` (Debian package bible-kjv) could not print the "
            "default text; install bible-kjv or give a text file");
    std::string text;
    std::istringstream lines(raw);
    std::string line;
    while (std::getline(lines, line)) {
        const size_t space = line.find(' ');  // "Gen1:1 In the beginning ..."
        if (space == std::string::npos) continue;
        text.append(line, space + 1);
        text += '\n';
    }
    return text;
}

}  // namespace

std::string read_eval_text(const std::filesystem::path& path) {
    if (path.empty()) return bible_text();
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("cannot read the text file '" + path.string() + "'");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string eval_text_name(const std::filesystem::path& path) {
    return path.empty() ? std::string("bible-kjv ") + kBibleRange : path.string();
}

std::vector<int32_t> eval_text_tokens(const Model& model, const std::string& text) {
    const auto& vocab = model.tokenizer().vocab();
    std::vector<int32_t> tokens;
    if (vocab.add_bos()) tokens.push_back(vocab.bos());
    const std::vector<int32_t> body = model.tokenizer().encode(text, false, false);
    tokens.insert(tokens.end(), body.begin(), body.end());
    return tokens;
}

}  // namespace fluoro::app
