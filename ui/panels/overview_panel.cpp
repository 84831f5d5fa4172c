#include "panels/overview_panel.h"

#include <QEvent>
#include <QHelpEvent>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QTimer>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>

#include "panels/panel_util.h"

namespace fluoro::ui {
namespace {

constexpr int kLabelW = 34;  // "L29" left of each row
constexpr int kHeaderH = 14;
constexpr int kMaxCell = 22;

// The glyph of each pattern, in AttentionPattern order.
constexpr const char* kLetters[] = {"I", "P", "O", "S", "L", "D", "M"};
constexpr const char* kNames[] = {"induction", "previous token", "own token", "sink",
                                  "local",     "diffuse",        "mixed"};

QColor pattern_color(AttentionPattern p) {
    return category_color(size_t(p));
}

QString masses(const HeadPattern& h) {
    return QStringLiteral(
               "entropy %1 nats; mass on sinks (keys 0-3) %2, own token %3, previous "
               "token %4, the 8 latest keys %5, induction %6; most attended key %7 "
               "(%8)")
        .arg(h.entropy, 0, 'f', 2)
        .arg(h.sink, 0, 'f', 3)
        .arg(h.self, 0, 'f', 3)
        .arg(h.previous, 0, 'f', 3)
        .arg(h.local, 0, 'f', 3)
        .arg(h.induction, 0, 'f', 3)
        .arg(h.max_key)
        .arg(h.max_weight, 0, 'f', 3);
}

bool usable(const AttentionOverview* ov) {
    return ov && ov->error.empty() && ov->n_layer > 0 && ov->n_head > 0;
}

}  // namespace

HeadPatternGrid::HeadPatternGrid(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void HeadPatternGrid::set_overview(const AttentionOverview* ov, int layer, int head) {
    ov_ = ov;
    layer_ = layer;
    head_ = head;
    setMaximumHeight(usable(ov) ? kHeaderH + ov->n_layer * kMaxCell + 4 : QWIDGETSIZE_MAX);
    updateGeometry();
    update();
}

QSize HeadPatternGrid::sizeHint() const {
    const int nl = usable(ov_) ? ov_->n_layer : 12;
    return {400, kHeaderH + std::min(nl * 16, 480) + 4};
}

QRect HeadPatternGrid::grid_rect() const {
    if (!usable(ov_)) return {};
    // Square-ish cells no larger than kMaxCell.
    const int avail_w = std::max(1, width() - kLabelW - 4),
              avail_h = std::max(1, height() - kHeaderH - 4);
    const int cell = std::max(
        3, std::min({kMaxCell, avail_w / ov_->n_head, avail_h / std::max(1, ov_->n_layer)}));
    return QRect(kLabelW, kHeaderH, cell * ov_->n_head, cell * ov_->n_layer);
}

std::pair<int, int> HeadPatternGrid::cell_at(QPoint pos) const {
    const QRect g = grid_rect();
    if (!usable(ov_) || !g.contains(pos)) return {-1, -1};
    const int cell = g.width() / ov_->n_head;
    return {std::min(ov_->n_layer - 1, (pos.y() - g.top()) / cell),
            std::min(ov_->n_head - 1, (pos.x() - g.left()) / cell)};
}

QString HeadPatternGrid::tooltip_at(QPoint pos) const {
    const auto [l, h] = cell_at(pos);
    if (l < 0) return {};
    const HeadPattern& p = ov_->head(l, h);
    return QStringLiteral("layer %1, head %2: %3\n%4\nclick: its weights over every key")
        .arg(l)
        .arg(h)
        .arg(QString::fromLatin1(kNames[int(p.label)]))
        .arg(masses(p));
}

bool HeadPatternGrid::event(QEvent* event) {
    return show_hover_tooltip(this, event, [this](QPoint p) { return tooltip_at(p); }) ||
           QWidget::event(event);
}

void HeadPatternGrid::mousePressEvent(QMouseEvent* event) {
    const auto [l, h] = cell_at(event->position().toPoint());
    if (l >= 0) emit head_clicked(l, h);
}

void HeadPatternGrid::paintEvent(QPaintEvent*) {
    QPainter p(this);
    const QPalette pal = palette();
    p.fillRect(rect(), pal.color(QPalette::Base));
    if (!usable(ov_)) return;
    const QRect g = grid_rect();
    const int cell = g.width() / ov_->n_head;
    QFont small = font();
    small.setPointSizeF(std::max(6.0, small.pointSizeF() * 0.8));
    p.setFont(small);
    p.setPen(pal.color(QPalette::Text));
    const int every_h = std::max(1, 18 / cell + 1), every_l = std::max(1, 12 / cell + 1);
    for (int h = 0; h < ov_->n_head; h += every_h)
        p.drawText(QRect(g.left() + h * cell, 0, std::max(cell, 18), kHeaderH),
                   Qt::AlignLeft | Qt::AlignVCenter, QString::number(h));
    for (int l = 0; l < ov_->n_layer; l += every_l)
        p.drawText(QRect(0, g.top() + l * cell, kLabelW - 4, std::max(cell, 12)),
                   Qt::AlignRight | Qt::AlignVCenter, QStringLiteral("L%1").arg(l));
    for (int l = 0; l < ov_->n_layer; ++l)
        for (int h = 0; h < ov_->n_head; ++h) {
            const HeadPattern& hp = ov_->head(l, h);
            const QRect c(g.left() + h * cell, g.top() + l * cell, cell - 1, cell - 1);
            const QColor bg = pattern_color(hp.label);
            p.fillRect(c, bg);
            if (cell >= 10) {
                p.setPen(text_on(bg));
                p.drawText(c, Qt::AlignCenter, QString::fromLatin1(kLetters[int(hp.label)]));
            }
        }
    if (layer_ >= 0 && head_ >= 0 && layer_ < ov_->n_layer && head_ < ov_->n_head) {
        QPen pen(pal.color(QPalette::Highlight));
        pen.setWidth(2);
        p.setPen(pen);
        p.setBrush(Qt::NoBrush);
        p.drawRect(QRect(g.left() + head_ * cell, g.top() + layer_ * cell, cell - 1, cell - 1));
    }
}

KeyStrip::KeyStrip(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
}

void KeyStrip::set_row(const AttentionOverview* ov, int layer, int head) {
    ov_ = ov;
    layer_ = layer;
    head_ = head;
    update();
}

QRect KeyStrip::bar_rect() const {
    return QRect(4, 4, std::max(1, width() - 8), std::max(1, height() - 8));
}

KeyStrip::Block KeyStrip::block_at(int x) const {
    Block b;
    if (!usable(ov_) || layer_ < 0 || head_ < 0) return b;
    const QRect r = bar_rect();
    if (x < r.left() || x > r.right()) return b;
    const int64_t n = ov_->position + 1, w = r.width();
    const int64_t col = x - r.left();
    // Column col covers keys [col * n / w, (col + 1) * n / w), at least one key.
    b.first = std::min(n - 1, col * n / w);
    b.last = std::max(b.first, std::min(n - 1, (col + 1) * n / w - 1));
    const std::span<const float> row = ov_->row(layer_, head_);
    for (int64_t k = b.first; k <= b.last; ++k)
        if (b.max_key < 0 || row[size_t(k)] > b.max) b.max = row[size_t(k)], b.max_key = k;
    return b;
}

QString KeyStrip::tooltip_at(QPoint pos) const {
    const Block b = block_at(pos.x());
    if (b.max_key < 0) return {};
    const QString piece = piece_label(ov_->key_pieces[size_t(b.max_key)]);
    if (b.first == b.last)
        return QStringLiteral("key %1 %2: weight %3").arg(b.first).arg(piece).arg(b.max, 0, 'g', 4);
    return QStringLiteral("keys %1-%2 (max-pooled): most attended key %3 %4, weight %5")
        .arg(b.first)
        .arg(b.last)
        .arg(b.max_key)
        .arg(piece)
        .arg(b.max, 0, 'g', 4);
}

bool KeyStrip::event(QEvent* event) {
    return show_hover_tooltip(this, event, [this](QPoint p) { return tooltip_at(p); }) ||
           QWidget::event(event);
}

void KeyStrip::paintEvent(QPaintEvent*) {
    QPainter p(this);
    const QPalette pal = palette();
    p.fillRect(rect(), pal.color(QPalette::Base));
    if (!usable(ov_) || layer_ < 0 || head_ < 0) return;
    const QRect r = bar_rect();
    // Bar height: the block's max weight on a square-root scale (small weights stay visible).
    for (int x = r.left(); x <= r.right(); ++x) {
        const Block b = block_at(x);
        if (b.max_key < 0) continue;
        const double t = std::sqrt(std::clamp(double(b.max), 0.0, 1.0));
        const int hgt = int(t * r.height());
        p.fillRect(QRect(x, r.bottom() - hgt + 1, 1, hgt), heat_color(t));
    }
}

OverviewPanel::OverviewPanel(QWidget* parent)
    : EventPanel(parent),
      headline_(new QLabel(this)),
      legend_(new QLabel(this)),
      grid_(new HeadPatternGrid(this)),
      detail_(new QLabel(this)),
      strip_(new KeyStrip(this)) {
    for (QLabel* l : {headline_, legend_, detail_}) {
        l->setWordWrap(true);
        l->setTextFormat(Qt::PlainText);
    }
    legend_->setForegroundRole(QPalette::PlaceholderText);
    legend_->setText(
        tr("I induction (attends to what followed this token before) · P previous token · O own "
           "token · S sinks (keys 0-3) · L the 8 latest keys · D diffuse · M mixed; a pattern "
           "holding half the head's mass names it."));
    connect(grid_, &HeadPatternGrid::head_clicked, this, &OverviewPanel::choose_head);
    auto* lower = new QWidget(this);
    auto* ll = new QVBoxLayout(lower);
    ll->setContentsMargins(0, 0, 0, 0);
    ll->addWidget(detail_);
    ll->addWidget(strip_);
    // The clicked head's row above the grid, so a click on a low layer shows it without
    // scrolling.
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(headline_);
    layout->addWidget(legend_);
    layout->addWidget(lower);
    layout->addWidget(grid_, 1);
    refresh();
}

void OverviewPanel::consume(const std::vector<Event>& batch) {
    bool changed = false;
    for (const Event& e : batch)
        if (const auto* o = std::get_if<std::shared_ptr<const AttentionOverview>>(&e)) {
            if ((*o)->run == want_run_ && (*o)->token == want_token_) {
                ov_ = *o;
                changed = true;
            }
        }
    if (changed) refresh();
}

void OverviewPanel::reset() {
    want_run_ = 0;
    want_token_ = -1;
    pending_ = false;
    ov_.reset();
    refresh();
}

void OverviewPanel::select_token(uint64_t run, int64_t index) {
    if (run == 0 || index < 0 || (run == want_run_ && index == want_token_)) return;
    want_run_ = run;
    want_token_ = index;
    ov_.reset();
    pending_ = true;
    if (isVisible() && !visibleRegion().isEmpty()) request();  // on screen
    refresh();
}

void OverviewPanel::paintEvent(QPaintEvent* event) {
    EventPanel::paintEvent(event);
    if (pending_) QTimer::singleShot(0, this, &OverviewPanel::request);
}

void OverviewPanel::request() {
    if (!pending_) return;
    pending_ = false;
    emit request_command(QStringLiteral("overview"),
                         Command(ComputeAttentionOverview{want_run_, want_token_}));
    refresh();
}

void OverviewPanel::choose_head(int layer, int head) {
    layer_ = layer;
    head_ = head;
    refresh();
}

QString OverviewPanel::headline() const {
    if (!ov_) {
        if (want_token_ < 0)
            return tr(
                "Pick a generated token (chat or token inspector) to see every layer's and "
                "head's attention of it at once. Only the latest run's tokens can be "
                "looked at: the engine re-runs the token's step from the conversation's "
                "cache.");
        return pending_ ? tr("Token %1: asked for when this dock is shown.").arg(want_token_)
                        : tr("Token %1: computing … (after the running generation, if one is "
                             "running)")
                              .arg(want_token_);
    }
    if (!ov_->error.empty())
        return tr("No overview for token %1: %2")
            .arg(ov_->token)
            .arg(QString::fromStdString(ov_->error));
    int counts[7] = {};
    for (const HeadPattern& h : ov_->heads) ++counts[int(h.label)];
    QStringList parts;
    for (int i = 0; i < 7; ++i)
        if (counts[i]) parts << QStringLiteral("%1 %2").arg(counts[i]).arg(kNames[i]);
    return tr("Token %1 %2 at position %3, attending over %4 keys: %5 layers × %6 heads — %7. "
              "%8.")
        .arg(ov_->token)
        .arg(piece_label(ov_->key_pieces.back()))
        .arg(ov_->position)
        .arg(ov_->position + 1)
        .arg(ov_->n_layer)
        .arg(ov_->n_head)
        .arg(parts.join(QStringLiteral(", ")))
        .arg(format_ms(ov_->ms));
}

QString OverviewPanel::detail() const {
    if (!usable(ov_.get())) return {};
    if (layer_ < 0 || layer_ >= ov_->n_layer || head_ < 0 || head_ >= ov_->n_head)
        return tr("Click a head to see its weights over every key.");
    const HeadPattern& h = ov_->head(layer_, head_);
    return tr("Layer %1, head %2: %3 — %4. Below: its weight on each key (max over the keys "
              "each pixel covers; hover for the key).")
        .arg(layer_)
        .arg(head_)
        .arg(QString::fromLatin1(kNames[int(h.label)]))
        .arg(masses(h));
}

void OverviewPanel::refresh() {
    headline_->setText(headline());
    const bool show = usable(ov_.get());
    legend_->setVisible(show);
    grid_->setVisible(show);
    detail_->setVisible(show);
    strip_->setVisible(show && layer_ >= 0);
    grid_->set_overview(ov_.get(), layer_, head_);
    strip_->set_row(ov_.get(), layer_, head_);
    detail_->setText(detail());
}

}  // namespace fluoro::ui
