#include "workbench/chat_view.h"

#include <QEvent>
#include <QScrollBar>
#include <QUrl>

namespace fluoro::ui {

ChatView::ChatView(QWidget* parent) : QTextBrowser(parent) {
    setOpenLinks(false);
    setOpenExternalLinks(false);
    setObjectName("chat_view");
    connect(this, &QTextBrowser::anchorClicked, this, &ChatView::on_anchor);
}

void ChatView::consume(const std::vector<Event>& batch) {
    for (const Event& e : batch) apply(e);
    render();
}

void ChatView::clear_messages() {
    messages_.clear();
    stats_.clear();
    last_run_ = 0;
    opt_.selected_token = -1;
    dirty_ = true;
    render();
}

void ChatView::set_placeholder(const QString& text) {
    placeholder_ = text;
    dirty_ = true;
    render();
}

void ChatView::set_editable(bool editable) {
    opt_.editable = editable;
    dirty_ = true;
    render();
}

void ChatView::select_token(uint64_t run, int64_t index) {
    if (opt_.selected_run == run && opt_.selected_token == index) return;
    opt_.selected_run = run;
    opt_.selected_token = index;
    dirty_ = true;
    render();
}

ChatMessage* ChatView::reply_of(uint64_t run) {
    for (auto it = messages_.rbegin(); it != messages_.rend(); ++it)
        if (it->run == run && it->role == QLatin1String("assistant")) return &*it;
    return nullptr;
}

void ChatView::apply(const Event& e) {
    if (const auto* cs = std::get_if<ConversationStarted>(&e)) {
        messages_.clear();  // then the turns it starts with (a continued conversation's)
        for (const fluoro::ChatMessage& m : cs->messages)
            messages_.push_back(
                {QString::fromStdString(m.role), 0, {{m.content, -1}}, {}, {}, false});
        dirty_ = true;
        return;
    }
    const uint64_t run = event_run(e);
    if (run != 0) stats_[run].add(e);
    if (const auto* s = std::get_if<RunStarted>(&e)) {
        last_run_ = s->run;
        if (s->kept_messages >= 0 && size_t(s->kept_messages) < messages_.size())
            messages_.resize(size_t(s->kept_messages));
        if (s->kind != RunKind::Regenerate)
            messages_.push_back({"user", 0, {{s->user_text, -1}}, {}, {}, false});
        messages_.push_back({"assistant", s->run, {}, {}, {}, true});
    } else if (const auto* t = std::get_if<TokenEvent>(&e)) {
        if (auto* m = reply_of(t->run)) {
            const int64_t index = t->id >= 0 ? t->index : -1;
            if (!t->split) {  // no reasoning split known (a stored run): the text as generated
                m->pieces.push_back({t->piece, index});
            } else {  // the engine's split; a token that is only a marker shows nothing
                if (!t->reasoning_text.empty())
                    m->pieces.push_back({t->reasoning_text, index, true});
                if (!t->answer_text.empty()) m->pieces.push_back({t->answer_text, index});
            }
            ++tokens_received_;
        }
    } else if (const auto* f = std::get_if<RunFinished>(&e)) {
        if (auto* m = reply_of(f->run)) {
            m->streaming = false;
            if (!f->error.empty()) m->error = QString::fromStdString(f->error);
        }
    } else if (run == 0) {
        return;
    }
    if (auto* m = run ? reply_of(run) : nullptr) {
        const RunStats& st = stats_[run];
        m->stats = st.line();
        if (st.reasoning_tokens() > 0 || !m->reasoning().empty())
            m->thought =
                m->has_answer() || st.finished()
                    ? QStringLiteral("Thought for %1 tokens \u00B7 %2 s")
                          .arg(st.reasoning_tokens())
                          .arg(double(st.reasoning_ns()) / 1e9, 0, 'f', 1)
                    : QStringLiteral("Thinking\u2026 %1 tokens").arg(st.reasoning_tokens());
    }
    dirty_ = true;
}

void ChatView::render() {
    if (!dirty_) return;
    dirty_ = false;
    const QPalette pal = palette();
    const bool dark = pal.color(QPalette::Base).lightness() < 128;
    ChatColors c;
    c.text = pal.color(QPalette::Text);
    c.muted = dark ? QColor(150, 150, 160) : QColor(110, 110, 120);
    c.user_bg = dark ? QColor(45, 52, 64) : QColor(232, 238, 247);
    c.code_bg = dark ? QColor(52, 55, 64) : QColor(240, 240, 236);
    c.selected_bg = dark ? QColor(120, 90, 20) : QColor(255, 220, 120);
    c.error = dark ? QColor(255, 120, 120) : QColor(180, 20, 20);
    QScrollBar* bar = verticalScrollBar();
    const bool at_end = bar->value() >= bar->maximum() - 4;
    const int keep = bar->value();
    if (messages_.empty()) {
        setHtml(QStringLiteral("<p align=\"center\" style=\"color:%1;\"><br><br>%2</p>")
                    .arg(c.muted.name(), placeholder_.toHtmlEscaped()));
        return;
    }
    setHtml(chat_html(messages_, c, opt_));
    bar->setValue(at_end ? bar->maximum() : keep);
}

void ChatView::changeEvent(QEvent* e) {
    QTextBrowser::changeEvent(e);
    if (e->type() == QEvent::PaletteChange) {
        dirty_ = true;
        render();
    }
}

void ChatView::on_anchor(const QUrl& url) {
    const QStringList parts = url.toString().split(QLatin1Char(':'));
    if (parts.size() == 3 && parts[0] == QLatin1String("tok")) {
        const quint64 run = parts[1].toULongLong();
        const qint64 index = parts[2].toLongLong();
        select_token(run, index);
        emit token_clicked(run, index);
    } else if (parts.size() == 2 && parts[0] == QLatin1String("think")) {
        if (auto* m = reply_of(parts[1].toULongLong())) {
            m->reasoning_toggle = m->reasoning_expanded() ? -1 : 1;
            dirty_ = true;
            render();
        }
    } else if (parts.size() == 2 && parts[0] == QLatin1String("edit")) {
        const int i = parts[1].toInt();
        if (i >= 0 && size_t(i) < messages_.size())
            emit edit_requested(i, QString::fromStdString(messages_[size_t(i)].text()));
    }
}

}  // namespace fluoro::ui
