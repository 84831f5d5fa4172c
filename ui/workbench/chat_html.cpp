#include "workbench/chat_html.h"

namespace fluoro::ui {

std::string ChatMessage::text() const {
    std::string s;
    for (const auto& p : pieces)
        if (!p.reasoning) s += p.text;
    return s;
}

std::string ChatMessage::reasoning() const {
    std::string s;
    for (const auto& p : pieces)
        if (p.reasoning) s += p.text;
    return s;
}

bool ChatMessage::has_answer() const {
    for (const auto& p : pieces)
        if (!p.reasoning && !p.text.empty()) return true;
    return false;
}

bool ChatMessage::reasoning_expanded() const {
    return reasoning_toggle != 0 ? reasoning_toggle > 0 : !has_answer();
}

namespace {

QString esc(const std::string& s) {
    return QString::fromUtf8(s.data(), qsizetype(s.size())).toHtmlEscaped();
}

// One line of a message: its chunks, each from one piece.
using Line = std::vector<ChatPiece>;

class MessageWriter {
  public:
    // Writes the pieces of `m` that are (reasoning) or are not its reasoning.
    MessageWriter(const ChatMessage& m, const ChatColors& c, const ChatRenderOptions& o,
                  bool reasoning)
        : m_(m), c_(c), o_(o), reasoning_(reasoning) {}

    QString run() {
        Line line;
        for (const auto& p : m_.pieces) {
            if (p.reasoning != reasoning_) continue;
            size_t start = 0;
            for (size_t nl; (nl = p.text.find('\n', start)) != std::string::npos; start = nl + 1) {
                line.push_back({p.text.substr(start, nl - start), p.token});
                end_line(line);
                line.clear();
            }
            if (start < p.text.size()) line.push_back({p.text.substr(start), p.token});
        }
        if (!line.empty()) end_line(line);
        close_block();
        return out_;
    }

  private:
    void end_line(const Line& line) {
        std::string plain;
        for (const auto& ch : line) plain += ch.text;
        const auto first = plain.find_first_not_of(" \t");
        // Blank lines before any text (the "\n\n" after </think>, the newline after <think>)
        // would only open the block or the answer with empty space.
        if (first == std::string::npos && out_.isEmpty()) return;
        if (first != std::string::npos && plain.compare(first, 3, "```") == 0) {
            close_block();
            in_code_ = !in_code_;
            if (in_code_) language_ = esc(plain.substr(first + 3)).trimmed();
            return;
        }
        if (!open_)
            open_block();
        else
            out_ += in_code_ ? QStringLiteral("\n") : QStringLiteral("<br>");
        for (const auto& ch : line) out_ += chunk(ch);
        in_inline_ = false;
    }

    // Prose text with `inline code` as shaded monospace (the backticks hidden); the state
    // carries across pieces and resets at each line's end.
    QString prose(const std::string& text) {
        QString out;
        size_t start = 0;
        for (;;) {
            const size_t tick = text.find('`', start);
            QString part = esc(
                text.substr(start, tick == std::string::npos ? std::string::npos : tick - start));
            if (in_inline_ && !part.isEmpty())
                part = QStringLiteral(
                           "<span style=\"font-family:monospace;background-color:%1;\">%2</span>")
                           .arg(c_.code_bg.name(), part);
            out += part;
            if (tick == std::string::npos) return out;
            in_inline_ = !in_inline_;
            start = tick + 1;
        }
    }

    QString chunk(const ChatPiece& p) {
        QString t = in_code_ ? esc(p.text) : prose(p.text);
        if (in_code_) t.replace(QLatin1Char(' '), QStringLiteral("&nbsp;"));
        if (p.token < 0) return t;
        const bool sel = m_.run == o_.selected_run && p.token == o_.selected_token;
        const QString style =
            QStringLiteral("color:%1;text-decoration:none;%2")
                .arg((reasoning_ ? c_.muted : c_.text).name(),
                     sel ? QStringLiteral("background-color:%1;").arg(c_.selected_bg.name())
                         : QString());
        return QStringLiteral("<a href=\"tok:%1:%2\" style=\"%3\">%4</a>")
            .arg(m_.run)
            .arg(p.token)
            .arg(style, t);
    }

    void open_block() {
        open_ = true;
        if (in_code_) {
            out_ += QStringLiteral(
                        "<table width=\"100%\" cellpadding=\"8\" cellspacing=\"0\" "
                        "style=\"margin-top:4px;margin-bottom:4px;\" bgcolor=\"%1\"><tr><td>")
                        .arg(c_.code_bg.name());
            if (!language_.isEmpty())
                out_ += QStringLiteral("<span style=\"color:%1;font-size:small;\">%2</span><br>")
                            .arg(c_.muted.name(), language_);
            out_ += QStringLiteral("<span style=\"font-family:monospace;white-space:pre;\">");
        } else {
            out_ += QStringLiteral("<p style=\"margin-top:2px;margin-bottom:2px;\">");
        }
    }

    void close_block() {
        if (!open_) return;
        out_ += in_code_ ? QStringLiteral("</span></td></tr></table>") : QStringLiteral("</p>");
        open_ = false;
    }

    const ChatMessage& m_;
    const ChatColors& c_;
    const ChatRenderOptions& o_;
    const bool reasoning_;
    QString out_, language_;
    bool in_code_ = false, open_ = false, in_inline_ = false;
};

}  // namespace

QString chat_html(const std::vector<ChatMessage>& messages, const ChatColors& c,
                  const ChatRenderOptions& opt) {
    QString html = QStringLiteral("<html><body style=\"color:%1;\">").arg(c.text.name());
    for (size_t i = 0; i < messages.size(); ++i) {
        const ChatMessage& m = messages[i];
        const bool user = m.role == QLatin1String("user");
        html +=
            QStringLiteral(
                "<table width=\"100%\" cellpadding=\"8\" cellspacing=\"0\" "
                "style=\"margin-bottom:10px;\"%1><tr><td>")
                .arg(user ? QStringLiteral(" bgcolor=\"%1\"").arg(c.user_bg.name()) : QString());
        html += QStringLiteral("<b>%1</b>")
                    .arg(user ? QStringLiteral("You") : QStringLiteral("Assistant"));
        if (user && opt.editable)
            html += QStringLiteral(
                        " &nbsp;<a href=\"edit:%1\" style=\"color:%2;font-size:small;\">edit</a>")
                        .arg(i)
                        .arg(c.muted.name());
        if (!m.thought.isEmpty()) {
            const bool open = m.reasoning_expanded();
            html +=
                QStringLiteral(
                    "<p style=\"margin-top:4px;margin-bottom:2px;font-size:small;\">"
                    "<a href=\"think:%1\" style=\"color:%2;text-decoration:none;\">%3 %4</a>"
                    "</p>")
                    .arg(m.run)
                    .arg(c.muted.name(), open ? QStringLiteral("\u25BE") : QStringLiteral("\u25B8"),
                         m.thought.toHtmlEscaped());
            if (open)
                html += QStringLiteral(
                            "<table width=\"100%\" cellpadding=\"6\" cellspacing=\"0\" "
                            "style=\"margin-bottom:4px;\"><tr><td width=\"3\" bgcolor=\"%1\">"
                            "</td><td style=\"color:%1;\">%2</td></tr></table>")
                            .arg(c.muted.name(), MessageWriter(m, c, opt, true).run());
        }
        html += MessageWriter(m, c, opt, false).run();
        if (!m.error.isEmpty())
            html += QStringLiteral("<p style=\"color:%1;\">%2</p>")
                        .arg(c.error.name(), m.error.toHtmlEscaped());
        if (!user && !m.stats.isEmpty())
            html += QStringLiteral("<p style=\"color:%1;font-size:small;margin-top:4px;\">%2</p>")
                        .arg(c.muted.name(), m.stats.toHtmlEscaped());
        html += QStringLiteral("</td></tr></table>");
    }
    return html + QStringLiteral("</body></html>");
}

}  // namespace fluoro::ui
