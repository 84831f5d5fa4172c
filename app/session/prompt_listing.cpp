#include "session/prompt_listing.h"

#include <cstdio>

#include "tokenizer/utf8.h"

namespace fluoro::app {
namespace {

void append_hex(std::string& out, unsigned char b) {
    char buf[5];
    std::snprintf(buf, sizeof buf, "\\x%02x", b);
    out += buf;
}

}  // namespace

std::string quoted_piece(std::string_view piece) {
    const bool valid = !tok::utf8::find_invalid(piece).has_value();
    std::string out = "\"";
    for (const char c : piece) {
        const auto b = static_cast<unsigned char>(c);
        switch (c) {
            case '\n':
                out += "\\n";
                continue;
            case '\r':
                out += "\\r";
                continue;
            case '\t':
                out += "\\t";
                continue;
            case '\\':
                out += "\\\\";
                continue;
            case '"':
                out += "\\\"";
                continue;
            default:
                break;
        }
        if (b < 0x20 || b == 0x7f || (b >= 0x80 && !valid))
            append_hex(out, b);
        else
            out += c;
    }
    out += '"';
    return out;
}

std::string prompt_listing(const RunStarted& run) {
    const size_t n = run.prompt_ids.size();
    std::string out = "prompt: " + std::to_string(n) + " tokens";
    out += run.prompt_special.empty() ? " (special tokens not recorded)\n"
                                      : " (special tokens in [brackets])\n";
    char head[48];
    for (size_t i = 0; i < n; ++i) {
        std::snprintf(head, sizeof head, "%6zu %7d  ", i, run.prompt_ids[i]);
        out += head;
        const std::string_view piece =
            i < run.prompt_pieces.size() ? std::string_view(run.prompt_pieces[i]) : "";
        const std::string q = quoted_piece(piece);
        if (i < run.prompt_special.size() && run.prompt_special[i])
            out += "[" + q.substr(1, q.size() - 2) + "]";
        else
            out += q;
        out += '\n';
    }
    return out;
}

}  // namespace fluoro::app
