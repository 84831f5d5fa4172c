#include "chat/chat_contents.h"

#include <string>
#include <string_view>

#include "chat/python_strip.h"
#include "core/error.h"

namespace fluoro {
namespace {

// Marks where each message's content sits in a rendering. \x01 (start of heading) cannot be
// typed into a chat box and is checked to be absent from contents; unlike \x1c-\x1f it is not
// whitespace to Python's str.strip(), which templates apply to contents (`| trim`): a \x1e
// marker was stripped away there once, and every message with it.
constexpr char kMark = '\x01';

std::string content_marker(size_t i) {
    std::string m(1, kMark);  // built by appends: GCC 12 misreports `a + b + c` here (-Wrestrict)
    m += std::to_string(i);
    m += kMark;
    return m;
}

// A rendering with markers for contents, cut into markup[0] content[idx[0]] markup[1] ...
// markup[n].
struct MarkedLayout {
    std::vector<std::string_view> markup;
    std::vector<size_t> index;
};

std::optional<MarkedLayout> cut_markers(std::string_view marked, size_t n_messages) {
    MarkedLayout m;
    size_t pos = 0;
    for (;;) {
        const size_t open = marked.find(kMark, pos);
        m.markup.push_back(marked.substr(pos, open == marked.npos ? marked.npos : open - pos));
        if (open == marked.npos) return m;
        const size_t close = marked.find(kMark, open + 1);
        if (close == marked.npos || close == open + 1) return std::nullopt;
        size_t index = 0;
        for (size_t i = open + 1; i < close; ++i) {
            if (marked[i] < '0' || marked[i] > '9' || index > n_messages) return std::nullopt;
            index = index * 10 + size_t(marked[i] - '0');
        }
        if (index >= n_messages) return std::nullopt;
        m.index.push_back(index);
        pos = close + 1;
    }
}

// Where, in `text` at `pos`, the template wrote message content `content`, when the rendering
// has the marker rendering's markup around it (`next` follows it). Templates emit a content
// verbatim or trimmed (`| trim`, `.strip()`, `.lstrip('\n')`): those are tried first, each
// must be followed by `next`. Otherwise the longest stretch up to an occurrence of `next` that is
// a slice of the content (a template that keeps only a part, e.g. the text after "</think>");
// taking the longest means markup-like text inside a content stays content, never the reverse.
std::optional<size_t> content_length(std::string_view text, size_t pos, std::string_view content,
                                     std::string_view next, bool last) {
    const auto followed = [&](size_t len) {
        const std::string_view rest = text.substr(pos + len);
        return last ? rest == next : rest.starts_with(next);
    };
    const std::string_view stripped = python_strip(content);
    std::string_view lstripped = content, rstripped = content;
    while (!lstripped.empty() && lstripped.front() == '\n') lstripped.remove_prefix(1);
    while (!rstripped.empty() && rstripped.back() == '\n') rstripped.remove_suffix(1);
    for (const std::string_view cand : {content, stripped, lstripped, rstripped}) {
        if (text.substr(pos).starts_with(cand) && followed(cand.size())) return cand.size();
    }
    if (next.empty()) return std::nullopt;
    std::optional<size_t> best;
    for (size_t at = text.find(next, pos); at != text.npos; at = text.find(next, at + 1)) {
        const size_t len = at - pos;
        if (len > content.size()) break;
        if (followed(len) && content.find(text.substr(pos, len)) != content.npos) best = len;
    }
    return best;
}

// The byte ranges of `text` (the real rendering) that are message contents, located with the
// marker rendering's markup; nullopt when the two renderings do not share that markup (a
// template whose markup depends on what a content says).
std::optional<std::vector<ContentSpan>> locate_contents(std::string_view text,
                                                        const MarkedLayout& layout,
                                                        std::span<const ChatMessage> messages) {
    std::vector<ContentSpan> spans;
    size_t pos = 0;
    for (size_t k = 0; k < layout.index.size(); ++k) {
        if (!text.substr(pos).starts_with(layout.markup[k])) return std::nullopt;
        pos += layout.markup[k].size();
        const bool last = k + 1 == layout.index.size();
        const auto len = content_length(text, pos, messages[layout.index[k]].content,
                                        layout.markup[k + 1], last);
        if (!len) return std::nullopt;
        if (*len > 0) spans.push_back({pos, *len});
        pos += *len;
    }
    if (text.substr(pos) != layout.markup.back()) return std::nullopt;
    return spans;
}

}  // namespace

ChatWithContents render_locating_contents(const ChatFormat& format,
                                          std::span<const ChatMessage> messages,
                                          bool add_generation_prompt, const ChatExtras& extras) {
    ChatWithContents out;
    out.chat = format.render(messages, add_generation_prompt, extras);
    std::vector<ChatMessage> marked(messages.begin(), messages.end());
    for (size_t i = 0; i < marked.size(); ++i) {
        if (marked[i].content.find(kMark) != std::string::npos)
            throw Error("chat message " + std::to_string(i) +
                        " contains the control character U+0001");
        // An empty content (or content null beside tool calls) has nothing to locate, and
        // templates test it (Qwen 3 writes "\n" before a tool call only after a content).
        if (marked[i].content.empty()) continue;
        marked[i].content = content_marker(i);
    }
    try {
        const RenderedChat with_markers = format.render(marked, add_generation_prompt, extras);
        if (const auto layout = cut_markers(with_markers.text, messages.size()))
            out.contents = locate_contents(out.chat.text, *layout, messages);
    } catch (const Error&) {
        // A template that looks into contents may refuse a marker: the contents stay unknown.
    }
    return out;
}

}  // namespace fluoro
