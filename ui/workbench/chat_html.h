// Chat messages as rich text for QTextBrowser: prose with clickable generated tokens (anchors
// "tok:RUN:INDEX"), fenced code blocks (``` lines) as shaded monospace blocks, a header per message
// and the run's statistics line under each reply.
#pragma once

#include <QColor>
#include <QString>
#include <cstdint>
#include <string>
#include <vector>

namespace fluoro::ui {

struct ChatPiece {
    std::string text;
    int64_t token = -1;  // index of the generated token, -1 for plain text
};

struct ChatMessage {
    QString role;  // "user", "assistant"
    uint64_t run = 0;
    std::vector<ChatPiece> pieces;
    QString stats;  // assistant only
    QString error;
    bool streaming = false;
    std::string text() const;
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
