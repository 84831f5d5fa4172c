#include "advisor/prompt_text.h"

#include <algorithm>

namespace fluoro::app {

PromptText::PromptText(std::span<const int32_t> ids, std::span<const std::string> pieces)
    : ids_(ids.begin(), ids.end()) {
    has_text_ = !ids.empty() && pieces.size() == ids.size();
    offsets_.reserve(ids.size() + 1);
    for (size_t i = 0; i < ids.size(); ++i) {
        if (has_text_) text_ += pieces[i];
        offsets_.push_back(int64_t(text_.size()));
    }
}

int64_t PromptText::token_at(int64_t at) const {
    const auto it = std::upper_bound(offsets_.begin(), offsets_.end(), at);
    // Empty pieces share an offset: the holder is the last token starting at or before `at`
    // whose text is not empty, which upper_bound - 1 gives.
    return std::min<int64_t>(tokens(), int64_t(it - offsets_.begin()) - 1);
}

int64_t PromptText::token_from(int64_t at) const {
    const auto it = std::lower_bound(offsets_.begin(), offsets_.end() - 1, at);
    return int64_t(it - offsets_.begin());
}

std::string PromptText::slice(int64_t begin, int64_t end) const {
    begin = std::clamp<int64_t>(begin, 0, tokens());
    end = std::clamp<int64_t>(end, begin, tokens());
    if (has_text_) return text_.substr(size_t(offset(begin)), size_t(offset(end) - offset(begin)));
    std::string out;
    for (int64_t i = begin; i < end; ++i) {
        if (!out.empty()) out += ' ';
        out += '#' + std::to_string(ids_[size_t(i)]);
    }
    return out;
}

namespace {

struct TurnMarker {
    std::string_view open, role_end;  // the role runs from after open to role_end
};
constexpr TurnMarker kMarkers[] = {
    {"<|im_start|>", "\n"},
    {"<start_of_turn>", "\n"},
    {"<|start_header_id|>", "<|end_header_id|>"},
};

std::string trim(std::string_view s) {
    const auto b = s.find_first_not_of(" \t\r\n");
    if (b == std::string_view::npos) return {};
    const auto e = s.find_last_not_of(" \t\r\n");
    return std::string(s.substr(b, e - b + 1));
}

}  // namespace

MessageLocation locate_message(const PromptText& p, int64_t token) {
    MessageLocation loc;
    loc.offset = token;
    if (!p.has_text() || token <= 0) return loc;
    const std::string& t = p.text();
    const size_t at = size_t(p.offset(std::min(token, p.tokens())));
    size_t best = std::string::npos;
    const TurnMarker* marker = nullptr;
    for (const auto& m : kMarkers) {
        if (at < m.open.size()) continue;
        const size_t pos = t.rfind(m.open, at - m.open.size());
        if (pos != std::string::npos && (best == std::string::npos || pos > best)) {
            best = pos;
            marker = &m;
        }
    }
    if (!marker) return loc;
    const size_t role_begin = best + marker->open.size();
    const size_t role_end = t.find(marker->role_end, role_begin);
    if (role_end == std::string::npos || role_end >= at) return loc;  // inside the marker itself
    size_t content = role_end + marker->role_end.size();
    if (marker->role_end != "\n") {  // Llama 3: "<|end_header_id|>\n\n" before the content
        while (content < t.size() && t[content] == '\n') ++content;
    }
    loc.role = trim(std::string_view(t).substr(role_begin, role_end - role_begin));
    loc.offset = std::max<int64_t>(0, token - p.token_from(int64_t(content)));
    return loc;
}

std::string describe_location(const MessageLocation& loc) {
    return loc.role.empty() ? "the prompt" : "the " + loc.role + " message";
}

namespace {

bool continuation(unsigned char c) {
    return (c & 0xC0) == 0x80;
}

std::string escape(std::string_view text) {
    std::string out;
    for (const char ch : text) {
        if (ch == '\n')
            out += "\\n";
        else if (ch == '\t')
            out += "\\t";
        else if (ch == '\r')
            out += "\\r";
        else if (static_cast<unsigned char>(ch) >= 0x20 && ch != 0x7F)
            out += ch;
    }
    return out;
}

// The first (or last) n characters of a UTF-8 string, counting a character per lead byte.
size_t utf8_chars(std::string_view s) {
    return size_t(std::count_if(s.begin(), s.end(), [](char c) { return !continuation(c); }));
}

}  // namespace

std::string one_line(std::string_view text, size_t max_chars, bool tail) {
    std::string s = escape(text);
    if (utf8_chars(s) <= max_chars || max_chars == 0) return s;
    const size_t keep = max_chars - 1;  // room for the ellipsis
    if (!tail) {
        size_t chars = 0, i = 0;
        for (; i < s.size(); ++i) {
            if (!continuation(static_cast<unsigned char>(s[i])) && chars++ == keep) break;
        }
        return s.substr(0, i) + "…";
    }
    size_t chars = 0, i = s.size();
    while (i > 0) {
        --i;
        if (!continuation(static_cast<unsigned char>(s[i])) && ++chars == keep) break;
    }
    return std::string("…") + s.substr(i);
}

}  // namespace fluoro::app
