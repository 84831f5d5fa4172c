// A recorded prompt as text: its token pieces concatenated, with each token's byte offset, so the
// advisor can look at characters (a timestamp, a line, a JSON object) and map them back to token
// positions. Also where a token sits in the chat template (which message, how far into it) and
// short one-line previews for reports.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fluoro::app {

class PromptText {
  public:
    PromptText() = default;
    // pieces[i] is token i's text; anything but one piece per token gives a prompt without text.
    PromptText(std::span<const int32_t> ids, std::span<const std::string> pieces);

    bool has_text() const { return has_text_; }
    const std::string& text() const { return text_; }
    int64_t tokens() const { return int64_t(offsets_.size()) - 1; }
    int64_t offset(int64_t token) const { return offsets_[size_t(token)]; }  // 0..tokens()
    // The token whose text holds byte `at` (tokens() when at is at or past the end).
    int64_t token_at(int64_t at) const;
    // The first token starting at or after byte `at`.
    int64_t token_from(int64_t at) const;
    // Text of tokens [begin, end) (clamped); without text, the ids as "#12 #34".
    std::string slice(int64_t begin, int64_t end) const;

  private:
    std::vector<int32_t> ids_;
    std::string text_;
    std::vector<int64_t> offsets_{0};  // tokens() + 1 entries
    bool has_text_ = false;
};

// Where a token sits in a chat-templated prompt: the message it belongs to (the role written
// after the template's turn marker: ChatML <|im_start|>, Gemma <start_of_turn>, Llama 3
// <|start_header_id|>) and its token offset from the start of that message's content. Without
// a marker before it, role is empty and offset is the token's index.
struct MessageLocation {
    std::string role;
    int64_t offset = 0;
};
MessageLocation locate_message(const PromptText& p, int64_t token);
// "the system message", "the user message", "the prompt".
std::string describe_location(const MessageLocation& loc);

// One line of at most max_chars characters: newlines and tabs as \n and \t, other control
// bytes dropped, cut at a UTF-8 boundary with "…" when longer (from the end when tail).
std::string one_line(std::string_view text, size_t max_chars, bool tail = false);

}  // namespace fluoro::app
