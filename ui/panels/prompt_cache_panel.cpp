#include "panels/prompt_cache_panel.h"

#include <QEvent>
#include <QGroupBox>
#include <QHeaderView>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollArea>
#include <QSplitter>
#include <QStackedWidget>
#include <QTabWidget>
#include <QTableView>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>

#include "panels/line_chart.h"
#include "panels/panel_util.h"
#include "panels/prefix_tree_view.h"

namespace fluoro::ui {

namespace {
QColor reused_color(const QPalette& pal) {
    return is_dark(pal) ? QColor(46, 120, 80) : QColor(170, 225, 180);
}
QColor recomputed_color(const QPalette& pal) {
    return is_dark(pal) ? QColor(150, 100, 40) : QColor(252, 214, 160);
}
QColor unknown_color(const QPalette& pal) {
    return pal.color(QPalette::AlternateBase);
}
}  // namespace

PromptSpanView::PromptSpanView(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    QSizePolicy sp(QSizePolicy::Preferred, QSizePolicy::Preferred);
    sp.setHeightForWidth(true);
    setSizePolicy(sp);
}

void PromptSpanView::set_request(const PromptRequest* request) {
    request_ = request;
    labels_.clear();
    if (request_)
        for (const std::string& piece : request_->pieces) labels_.push_back(piece_label(piece, 18));
    updateGeometry();
    update();
}

std::vector<QRect> PromptSpanView::layout_for(int width) const {
    std::vector<QRect> rects;
    const QFontMetrics fm(font());
    const int h = fm.height() + 4;
    int x = 4, y = 4;
    for (const QString& label : labels_) {
        const int w = fm.horizontalAdvance(label) + 6;
        if (x + w > width - 4 && x > 4) {
            x = 4;
            y += h + 3;
        }
        rects.emplace_back(x, y, w, h);
        x += w + 2;
    }
    return rects;
}

int PromptSpanView::heightForWidth(int width) const {
    const auto rects = layout_for(width);
    return rects.empty() ? 40 : rects.back().bottom() + 8;
}

QString PromptSpanView::tooltip_at(QPoint pos) const {
    if (!request_) return {};
    const auto rects = layout_for(width());
    for (size_t i = 0; i < rects.size(); ++i) {
        if (!rects[i].contains(pos)) continue;
        QString what = QStringLiteral("no cache report");
        if (request_->cache)
            what = int64_t(i) < request_->cache->cached_tokens
                       ? QStringLiteral("reused from the cache")
                       : QStringLiteral("recomputed");
        if (request_->first_diverging() == int64_t(i))
            what += QStringLiteral(" — first diverging token");
        return QStringLiteral("#%1 “%2”\n%3")
            .arg(i)
            .arg(piece_label(request_->pieces[i], 40))
            .arg(what);
    }
    return {};
}

void PromptSpanView::mouseMoveEvent(QMouseEvent* event) {
    const QString text = tooltip_at(event->position().toPoint());
    if (text.isEmpty())
        QToolTip::hideText();
    else
        QToolTip::showText(event->globalPosition().toPoint(), text, this);
}

void PromptSpanView::paintEvent(QPaintEvent* event) {
    QPainter p(this);
    const QPalette pal = palette();
    p.fillRect(rect(), pal.color(QPalette::Base));
    if (!request_) return;
    const auto rects = layout_for(width());
    const auto diverging = request_->first_diverging();
    p.setRenderHint(QPainter::Antialiasing);
    for (size_t i = 0; i < rects.size(); ++i) {
        if (!rects[i].intersects(event->rect())) continue;
        QColor bg = unknown_color(pal);
        if (request_->cache)
            bg = int64_t(i) < request_->cache->cached_tokens ? reused_color(pal)
                                                             : recomputed_color(pal);
        p.setPen(Qt::NoPen);
        p.setBrush(bg);
        p.drawRoundedRect(rects[i], 3, 3);
        if (diverging == int64_t(i)) {
            p.setPen(QPen(pal.color(QPalette::Highlight), 2.5));
            p.setBrush(Qt::NoBrush);
            p.drawRoundedRect(rects[i].adjusted(-1, -1, 1, 1), 3, 3);
        }
        p.setPen(text_on(bg));
        p.drawText(rects[i], Qt::AlignCenter, labels_[i]);
    }
}

PromptCachePanel::PromptCachePanel(QWidget* parent)
    : EventPanel(parent),
      stack_(new QStackedWidget(this)),
      notice_(
          make_notice(QStringLiteral("No requests yet — each run's prompt shows here with the span "
                                     "the prefix cache reused."),
                      this)),
      summary_(new QLabel(this)),
      scroll_(new QScrollArea(this)),
      spans_(new PromptSpanView),
      table_(new QTableView(this)),
      model_(new PromptCacheModel(this)),
      chart_(new LineChart(QStringLiteral("Hit rate over requests"), QStringLiteral("request"),
                           QString(), this)),
      tree_(make_notice(QString(), this)),
      tree_view_(new PrefixTreeView) {
    summary_->setWordWrap(true);
    summary_->setTextFormat(Qt::RichText);
    scroll_->setWidget(spans_);
    scroll_->setWidgetResizable(true);
    table_->setModel(model_);
    table_->verticalHeader()->hide();
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->setSelectionMode(QAbstractItemView::SingleSelection);
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->horizontalHeader()->setStretchLastSection(true);
    chart_->set_y_range(0, 1);
    chart_->set_integer_x();
    rate_req_ = chart_->add_series(QStringLiteral("request"), category_color(4));
    rate_all_ = chart_->add_series(QStringLiteral("all so far"), category_color(0));
    auto* tree_box = new QGroupBox(QStringLiteral("Cache contents (prefix tree)"), this);
    auto* tl = new QVBoxLayout(tree_box);
    tl->addWidget(tree_);
    auto* tree_scroll = new QScrollArea(tree_box);
    tree_scroll->setWidget(tree_view_);
    tree_scroll->setWidgetResizable(true);
    tl->addWidget(tree_scroll, 1);

    auto* shown = new QWidget(this);
    auto* top = new QVBoxLayout(shown);
    top->setContentsMargins(0, 0, 0, 0);
    top->addWidget(summary_);
    top->addWidget(scroll_, 1);
    auto* lower = new QTabWidget(this);
    lower->addTab(table_, QStringLiteral("Requests"));
    lower->addTab(chart_, QStringLiteral("Hit rate"));
    lower->addTab(tree_box, QStringLiteral("Cache contents"));
    auto* split = new QSplitter(Qt::Vertical, this);
    split->addWidget(shown);
    split->addWidget(lower);
    stack_->addWidget(notice_);
    stack_->addWidget(split);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(stack_);

    connect(table_, &QTableView::clicked, this, [this](const QModelIndex& i) {
        follow_latest_ = i.row() == int(state_.requests().size()) - 1;
        show_request(i.row());
    });
    refresh();
}

void PromptCachePanel::changeEvent(QEvent* event) {
    EventPanel::changeEvent(event);
    if (event->type() == QEvent::PaletteChange) show_request(shown_);  // span colors in the text
}

void PromptCachePanel::consume(const std::vector<Event>& batch) {
    bool changed = false;
    for (const Event& e : batch) changed |= state_.consume(e);
    if (changed) refresh();
}

void PromptCachePanel::reset() {
    state_.reset();
    shown_ = -1;
    follow_latest_ = true;
    refresh();
}

QString PromptCachePanel::notice() const {
    return stack_->currentWidget() == notice_ ? notice_->text() : QString();
}

QString PromptCachePanel::summary() const {
    return summary_->text();
}

QString PromptCachePanel::tree_notice() const {
    return tree_->text();
}

void PromptCachePanel::show_request(int row) {
    const auto& reqs = state_.requests();
    shown_ = row >= 0 && row < int(reqs.size()) ? row : int(reqs.size()) - 1;
    const PromptRequest* r = shown_ >= 0 ? &reqs[size_t(shown_)] : nullptr;
    spans_->set_request(r);
    show_tree(r);
    if (shown_ >= 0) table_->selectRow(shown_);
    if (!r) {
        summary_->clear();
        return;
    }
    const QString head =
        QStringLiteral("<b>Run %1</b> · %2 prompt tokens · ").arg(r->run).arg(r->prompt_tokens);
    const QPalette pal = palette();
    const QString reused =
        QStringLiteral("<span style='background:%1;color:%2'>&nbsp;reused&nbsp;</span>")
            .arg(reused_color(pal).name(), text_on(reused_color(pal)).name());
    const QString recomputed =
        QStringLiteral("<span style='background:%1;color:%2'>&nbsp;recomputed&nbsp;</span>")
            .arg(recomputed_color(pal).name(), text_on(recomputed_color(pal)).name());
    if (!r->cache) {
        summary_->setText(head +
                          QStringLiteral("no prefix-cache report for this request (prompt cache "
                                         "not active), so reuse is unknown."));
        return;
    }
    const PrefixCacheEvent& c = *r->cache;
    QString text = head + QStringLiteral("%1 %2 of %3 (%4) · %5 %6")
                              .arg(reused)
                              .arg(c.cached_tokens)
                              .arg(c.prompt_tokens)
                              .arg(format_percent(r->hit_rate()))
                              .arg(recomputed)
                              .arg(c.computed_tokens);
    if (const auto d = r->first_diverging()) {
        const QString piece = size_t(*d) < r->pieces.size()
                                  ? piece_label(r->pieces[size_t(*d)], 24).toHtmlEscaped()
                                  : QStringLiteral("?");
        text += *d == 0 ? QStringLiteral(
                              " · nothing matched: the cache diverges "
                              "at the first token “%1”")
                              .arg(piece)
                        : QStringLiteral(" · first diverging token <b>#%1 “%2”</b> (outlined)")
                              .arg(*d)
                              .arg(piece);
        if (c.diverge_at == *d)
            text += QStringLiteral(" where the cache held “%1”")
                        .arg(piece_label(c.diverge_cached_piece, 24).toHtmlEscaped());
        else
            text += QStringLiteral(", past everything cached");
    } else {
        text += QStringLiteral(" · the whole prompt was reused");
    }
    if (c.source == "prefix_cache")
        text += QStringLiteral(" · reused from another conversation's cached prefix");
    else if (c.source == "conversation")
        text += QStringLiteral(" · reused from this conversation");
    if (c.evicted_tokens > 0)
        text += QStringLiteral(" · %1 cache entries (%2 tokens) evicted")
                    .arg(c.evicted_entries)
                    .arg(c.evicted_tokens);
    summary_->setText(text);
}

void PromptCachePanel::refresh() {
    const auto& reqs = state_.requests();
    stack_->setCurrentIndex(reqs.empty() ? 0 : 1);
    model_->set_state(&state_);
    show_request(follow_latest_ ? int(reqs.size()) - 1 : shown_);
    QList<QPointF> per, all;
    int64_t cached = 0, prompt = 0;
    for (size_t i = 0; i < reqs.size(); ++i) {
        if (!reqs[i].cache) continue;
        cached += reqs[i].cache->cached_tokens;
        prompt += reqs[i].cache->prompt_tokens;
        per.append({double(i + 1), reqs[i].hit_rate()});
        if (prompt > 0) all.append({double(i + 1), double(cached) / double(prompt)});
    }
    chart_->set_points(rate_req_, per);
    chart_->set_points(rate_all_, all);
}

void PromptCachePanel::show_tree(const PromptRequest* r) {
    tree_view_->set_event(r && r->cache ? &*r->cache : nullptr);
    if (!state_.any_report()) {
        tree_->setText(
            QStringLiteral("Prompt cache not active: no prefix-cache events in these "
                           "runs."));
        return;
    }
    if (!r || !r->cache) {
        tree_->setText(QStringLiteral("Run %1 has no prefix-cache report (prompt cache not active "
                                      "for it).")
                           .arg(r ? r->run : 0));
        return;
    }
    const PrefixCacheEvent& c = *r->cache;
    if (c.tree.empty()) {
        tree_->setText(
            c.cache_entries > 0
                ? QStringLiteral("After run %1 the prefix cache holds %2 entries, %3 tokens in all "
                                 "(shared prefixes counted per entry); its tree is not in this "
                                 "report (runs stored before schema 9 do not keep it).")
                      .arg(r->run)
                      .arg(c.cache_entries)
                      .arg(c.cache_tokens)
                : QStringLiteral("After run %1 the cross-conversation prefix cache is empty or "
                                 "off (only the live conversation's own prefix is reused).")
                      .arg(r->run));
        return;
    }
    int64_t bytes = 0, matched = 0;
    for (const PrefixTreeNode& n : c.tree) {
        bytes += n.bytes;
        matched += n.matched;
    }
    tree_->setText(
        QStringLiteral("After run %1 the prefix cache holds %2 entries, %3 tokens in "
                       "all (shared prefixes counted per entry), %4 of KV held once. "
                       "The request's prompt follows the highlighted path for %5 "
                       "tokens%6; entries are outlined.")
            .arg(r->run)
            .arg(c.cache_entries)
            .arg(c.cache_tokens)
            .arg(format_bytes(bytes))
            .arg(matched)
            .arg(c.evicted_entries > 0
                     ? QStringLiteral("; %1 entries were evicted for it").arg(c.evicted_entries)
                     : QString()));
}

}  // namespace fluoro::ui
