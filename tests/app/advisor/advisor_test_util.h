// Helpers for the advisor tests: a toy tokenizer (words, single punctuation and <|...|> markers
// are tokens; ids assigned on first sight, shared by every prompt a WordTokenizer makes) and
// ChatML-style prompts built from it.
#pragma once

#include <cctype>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "advisor/prompt_advisor.h"

namespace fluoro::app::test {

class WordTokenizer {
  public:
    std::vector<std::string> split(std::string_view text) const {
        std::vector<std::string> out;
        size_t i = 0;
        while (i < text.size()) {
            size_t j = i + 1;
            if (text.substr(i, 2) == "<|") {
                const size_t e = text.find("|>", i + 2);
                j = e == std::string_view::npos ? text.size() : e + 2;
            } else if (std::isalnum(static_cast<unsigned char>(text[i]))) {
                while (j < text.size() && std::isalnum(static_cast<unsigned char>(text[j]))) ++j;
            }
            out.emplace_back(text.substr(i, j - i));
            i = j;
        }
        return out;
    }
    int64_t count(std::string_view text) const { return int64_t(split(text).size()); }

    AdvisorRequest request(const std::string& id, std::string_view text) {
        AdvisorRequest r;
        r.id = id;
        r.pieces = split(text);
        for (const auto& p : r.pieces) r.ids.push_back(id_of(p));
        return r;
    }

  private:
    int32_t id_of(const std::string& piece) {
        const auto [it, fresh] = ids_.try_emplace(piece, int32_t(ids_.size()));
        return it->second;
    }
    std::map<std::string, int32_t> ids_;
};

inline std::string chatml(const std::string& system, const std::string& user) {
    return "<|im_start|>system\n" + system + "<|im_end|>\n<|im_start|>user\n" + user +
           "<|im_end|>\n<|im_start|>assistant\n";
}

inline const std::vector<std::string>& questions() {
    static const std::vector<std::string> q = {
        "Why is the sky blue?",         "Name three prime numbers.",  "How do bees make honey?",
        "What is the capital of Peru?", "Explain recursion briefly.", "Write a haiku about rain.",
        "Who painted the Mona Lisa?",   "How far away is the Moon?",  "What does a compiler do?",
        "Suggest a name for a cat.",
    };
    return q;
}

// A long, stable block of instructions (what a cache should serve every time).
inline std::string instructions() {
    std::string s;
    for (int i = 0; i < 12; ++i)
        s += "Rule " + std::to_string(i) +
             ": answer clearly, cite sources when you can, and keep "
             "the tone friendly.\n";
    return s;
}

}  // namespace fluoro::app::test
