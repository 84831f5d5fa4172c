// The long text the KV eval (and perplexity) reads: a UTF-8 file, or by default the King James
// Bible's Genesis and Exodus from Debian's bible-kjv package (`bible -f` prints one verse per line
// after its reference, which is stripped): public domain, long, and installed by the test setup.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace fluoro {
class Model;
}

namespace fluoro::app {

inline constexpr const char* kBibleRange = "Gen1:1-Exo40:38";  // Genesis and Exodus

// The file's bytes; an empty path: the Bible text. Throws Error naming the file, or saying how to
// install bible-kjv.
std::string read_eval_text(const std::filesystem::path& path);

// What read_eval_text(path) read, for reports: the path, or "bible-kjv Gen1:1-Exo40:38".
std::string eval_text_name(const std::filesystem::path& path);

// The text's token ids as a long text is fed: BOS first when the vocabulary adds one, no chat
// template.
std::vector<int32_t> eval_text_tokens(const Model& model, const std::string& text);

}  // namespace fluoro::app
