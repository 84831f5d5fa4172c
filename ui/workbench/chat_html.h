// Chat messages as rich text for QTextBrowser: prose with clickable generated tokens (anchors
// "tok:RUN:INDEX"), fenced code blocks (``` lines) as shaded monospace blocks, a header per message
// and the run's statistics line under each reply. A reply's reasoning (pieces the engine marked
// as reasoning) comes first as a collapsible block: a header line ("think:RUN" toggles it) and,
// when expanded, the reasoning text in muted colours; the answer follows.
#pragma once

#include <QColor>
#include <QString>
#include <cstdint>
#include <string>
#include <vector>

namespace fluoro::ui {

struct ChatPiece {
    std::string text;
    int64_t token = -1;      // index of the generated token, -1 for plain text
    bool reasoning = false;  // part of the model's reasoning (TokenEvent::reasoning_text)
};

struct ChatMessage {
    QString role;  // "user", "assistant"
    uint64_t run = 0;
    std::vector<ChatPiece> pieces;
    QString stats;  // assistant only
    QString error;
    bool streaming = false;
    // The reasoning block's header ("Thought for 12 tokens · 1.4 s"), and whether the user
    // opened (1) or closed (-1) it; 0: open while only reasoning has arrived, closed once the
    // answer starts.
    QString thought = {};
    int reasoning_toggle = 0;
    std::string text() const;  // the answer's text (reasoning left out)
    std::string reasoning() const;
    bool has_answer() const;
    bool reasoning_expanded() const;
};

struct ChatColors {
    QColor text, muted, user_bg, code_bg, selected_bg, error;
};

struct ChatRenderOptions {
    bool editable = false;  // user messages get an "edit" link ("edit:MESSAGE")
    uint64_t selected_run = 0;
    int64_t selected_token = -1;
};

QString chat_html(const std::vector<ChatMessage>& messages, const ChatColors& colors,
                  const ChatRenderOptions& opt);

}  // namespace fluoro::ui
