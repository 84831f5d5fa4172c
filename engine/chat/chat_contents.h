// Where each message's content sits in a chat template's rendering, so that the tokenizer can keep
// special-token text a user typed as text while parsing the template's own markup. The template
// renders the conversation twice: as it is, and with a marker in place of every content; the
// marker rendering's markup, found again in the real one, brackets the contents. Templates trim
// contents or keep a part of them (Qwen 3 keeps what follows "</think>"), so a content is found as
// the text the template kept of it, not by its markers' bytes.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "chat/chat_format.h"

namespace fluoro {

struct ContentSpan {
    size_t offset;  // into RenderedChat::text
    size_t length;
};

struct ChatWithContents {
    RenderedChat chat;
    // Sorted, not overlapping; empty contents are left out. nullopt: the markup depends on what
    // the contents say (a template that tests a content), so the contents could not be located.
    std::optional<std::vector<ContentSpan>> contents;
};

// Throws what ChatFormat::render throws for the real conversation, and Error when a content
// holds the marker byte U+0001 (it cannot be typed into a chat box). `extras` (tools, ...) go to
// both renderings. Empty contents (content null included) are not marked: nothing to locate.
ChatWithContents render_locating_contents(const ChatFormat& format,
                                          std::span<const ChatMessage> messages,
                                          bool add_generation_prompt,
                                          const ChatExtras& extras = {});

}  // namespace fluoro
