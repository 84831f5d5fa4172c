#include "panels/expert_panel.h"

#include <QEvent>
#include <QHeaderView>
#include <QHelpEvent>
#include <QLabel>
#include <QPainter>
#include <QSplitter>
#include <QTableWidget>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>

#include "panels/panel_util.h"

namespace fluoro::ui {
namespace {

constexpr int kLabelW = 34;  // "L47" at the left of each row
constexpr int kHeaderH = 14;
constexpr int kMaxRowH = 28;

}  // namespace

ExpertLoadGrid::ExpertLoadGrid(QWidget* parent) : QWidget(parent) {
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
    setMouseTracking(true);
}

void ExpertLoadGrid::set_state(const ExpertState* state, const ExpertState::TokenRoute* picked) {
    state_ = state;
    picked_ = picked;
    const int layers = state_ ? state_->n_layer() : 0;
    setMaximumHeight(layers > 0 ? maximumSizeHintFor(layers).height() : QWIDGETSIZE_MAX);
    updateGeometry();
    update();
}

QSize ExpertLoadGrid::sizeHint() const {
    const int layers = state_ ? std::max(1, state_->n_layer()) : 8;
    return {480, kHeaderH + std::min(layers * 14, 420) + 4};
}

QSize ExpertLoadGrid::maximumSizeHintFor(int layers) {
    // Rows no taller than kMaxRowH: a model of a few layers gets a compact grid, not bars.
    return {QWIDGETSIZE_MAX, kHeaderH + std::max(1, layers) * kMaxRowH + 4};
}

QRect ExpertLoadGrid::grid_rect() const {
    return QRect(kLabelW, kHeaderH, std::max(1, width() - kLabelW - 4),
                 std::max(1, height() - kHeaderH - 4));
}

std::pair<int, int> ExpertLoadGrid::cell_at(QPoint pos) const {
    if (!state_ || state_->empty()) return {-1, -1};
    const QRect g = grid_rect();
    if (!g.contains(pos)) return {-1, -1};
    const int nl = state_->n_layer(), ne = state_->n_expert();
    const int il = std::min(nl - 1, int(int64_t(pos.y() - g.top()) * nl / g.height()));
    const int e = std::min(ne - 1, int(int64_t(pos.x() - g.left()) * ne / g.width()));
    return {il, e};
}

QString ExpertLoadGrid::tooltip_at(QPoint pos) const {
    const auto [il, e] = cell_at(pos);
    if (il < 0) return {};
    const ExpertState& load = *state_;
    const int64_t n = load.count(il, e), total = load.layer_total(il);
    QString tip = QStringLiteral(
                      "layer %1, expert %2: %3 of the layer's %4 token choices (%5; "
                      "an even spread is %6)")
                      .arg(il)
                      .arg(e)
                      .arg(n)
                      .arg(total)
                      .arg(format_percent(total ? double(n) / double(total) : 0.0))
                      .arg(format_percent(1.0 / load.n_expert()));
    if (picked_) {
        const int32_t k = load.n_used();
        for (int32_t j = 0; j < k; ++j)
            if (picked_->experts[size_t(il * k + j)] == e)
                tip += QStringLiteral("\nthe picked token went here, router weight %1")
                           .arg(double(picked_->weights[size_t(il * k + j)]), 0, 'f', 3);
    }
    return tip;
}

bool ExpertLoadGrid::event(QEvent* event) {
    return show_hover_tooltip(this, event, [this](QPoint p) { return tooltip_at(p); }) ||
           QWidget::event(event);
}

void ExpertLoadGrid::paintEvent(QPaintEvent*) {
    QPainter p(this);
    const QPalette pal = palette();
    p.fillRect(rect(), pal.color(QPalette::Base));
    if (!state_ || state_->empty()) return;
    const ExpertState& load = *state_;
    const int nl = load.n_layer(), ne = load.n_expert(), k = load.n_used();
    const QRect g = grid_rect();
    const double cw = double(g.width()) / ne, ch = double(g.height()) / nl;
    QFont small = font();
    small.setPointSizeF(std::max(6.0, small.pointSizeF() * 0.8));
    p.setFont(small);
    p.setPen(pal.color(QPalette::Text));
    // Expert numbers on top where they fit, layer numbers at the left where they fit.
    const int label_every_e = std::max(1, int(24 / std::max(1.0, cw)) + 1);
    for (int e = 0; e < ne; e += label_every_e)
        p.drawText(QRectF(g.left() + e * cw, 0, std::max(cw, 24.0), kHeaderH),
                   Qt::AlignLeft | Qt::AlignVCenter, QString::number(e));
    const int label_every_l = std::max(1, int(12 / std::max(1.0, ch)) + 1);
    for (int il = 0; il < nl; il += label_every_l)
        p.drawText(QRectF(0, g.top() + il * ch, kLabelW - 4, std::max(ch, 12.0)),
                   Qt::AlignRight | Qt::AlignVCenter, QStringLiteral("L%1").arg(il));
    for (int il = 0; il < nl; ++il) {
        int64_t busiest = 1;
        for (int e = 0; e < ne; ++e) busiest = std::max(busiest, load.count(il, e));
        for (int e = 0; e < ne; ++e) {
            const QRectF cell(g.left() + e * cw, g.top() + il * ch, cw, ch);
            p.fillRect(cell, heat_color(double(load.count(il, e)) / double(busiest)));
        }
    }
    if (picked_) {
        QPen pen(pal.color(QPalette::Highlight));
        pen.setWidthF(std::clamp(std::min(cw, ch) / 5.0, 1.0, 3.0));
        p.setPen(pen);
        p.setBrush(Qt::NoBrush);
        for (int il = 0; il < nl; ++il)
            for (int j = 0; j < k; ++j) {
                const int32_t e = picked_->experts[size_t(il * k + j)];
                if (e < 0 || e >= ne) continue;
                p.drawRect(
                    QRectF(g.left() + e * cw, g.top() + il * ch, cw, ch).adjusted(1, 1, -1, -1));
            }
    }
}

ExpertPanel::ExpertPanel(QWidget* parent)
    : EventPanel(parent),
      notice_(make_notice(QString(), this)),
      summary_(new QLabel(this)),
      grid_(new ExpertLoadGrid(this)),
      token_(new QLabel(this)),
      table_(new QTableWidget(this)) {
    summary_->setWordWrap(true);
    summary_->setTextFormat(Qt::PlainText);
    token_->setWordWrap(true);
    token_->setTextFormat(Qt::PlainText);
    table_->verticalHeader()->hide();
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->horizontalHeader()->setStretchLastSection(true);
    table_->setMinimumHeight(60);

    auto* lower = new QWidget(this);
    auto* ll = new QVBoxLayout(lower);
    ll->setContentsMargins(0, 0, 0, 0);
    ll->addWidget(token_);
    ll->addWidget(table_, 1);
    auto* split = new QSplitter(Qt::Vertical, this);
    split->addWidget(grid_);
    split->addWidget(lower);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(notice_);
    layout->addWidget(summary_);
    layout->addWidget(split, 1);
    refresh();
}

void ExpertPanel::consume(const std::vector<Event>& batch) {
    bool changed = false;
    for (const Event& e : batch) {
        if (std::holds_alternative<RunStarted>(e)) selected_ = -1;
        changed |= state_.consume(e);
    }
    if (changed) refresh();
}

void ExpertPanel::reset() {
    state_.reset();
    selected_ = -1;
    refresh();
}

void ExpertPanel::select_token(uint64_t run, int64_t index) {
    if (!state_.has_run() || run != state_.run()) return;
    selected_ = index;
    refresh();
}

QString ExpertPanel::summary() const {
    const ExpertState& load = state_;
    if (load.empty()) return {};
    double worst = 0;  // the busiest expert's load over an even spread, over all layers
    for (int32_t il = 0; il < load.n_layer(); ++il) {
        const int64_t total = load.layer_total(il);
        if (total == 0) continue;
        for (int32_t e = 0; e < load.n_expert(); ++e)
            worst = std::max(worst, double(load.count(il, e)) * load.n_expert() / double(total));
    }
    QString s = QStringLiteral(
                    "%1 tokens routed, %2 of %3 experts each, %4 layers; busiest "
                    "expert %5× an even load. Color: each expert's choices relative to its layer's "
                    "busiest.")
                    .arg(load.tokens())
                    .arg(load.n_used())
                    .arg(load.n_expert())
                    .arg(load.n_layer())
                    .arg(worst, 0, 'f', 2);
    if (state_.speculative_tokens() > 0)
        s += QStringLiteral(
                 " %1 of them in draft/verify steps (counted in the load, not in the "
                 "token map).")
                 .arg(state_.speculative_tokens());
    return s;
}

int64_t ExpertPanel::shown_index() const {
    return selected_ >= 0 ? selected_ : state_.routed_tokens() - 1;
}

QString ExpertPanel::token_line() const {
    if (state_.empty()) return {};
    const int64_t shown = shown_index();
    if (shown < 0)
        return QStringLiteral(
            "No decode step yet: pick a generated token (chat or token "
            "inspector) once there is one to see the experts each layer sent "
            "it to.");
    const QString piece = state_.piece_of(shown);
    const QString name = QStringLiteral("%1token %2%3")
                             .arg(selected_ < 0 ? QStringLiteral("Latest fed ") : QString())
                             .arg(shown)
                             .arg(piece.isEmpty() ? QString() : QStringLiteral(" “%1”").arg(piece));
    const ExpertState::TokenRoute* r = state_.route_of(shown);
    if (!r)
        return QStringLiteral(
                   "%1: no decode step fed it to the model (the run ended on it, it "
                   "was accepted in a speculative step, or it has not arrived).")
            .arg(name);
    return QStringLiteral(
               "%1, fed at decode step %2: its experts per layer (outlined in the "
               "grid) and the router's weights%3.")
        .arg(name)
        .arg(r->step)
        .arg(selected_ < 0 ? QStringLiteral("; pick a token in the chat or token inspector")
                           : QString());
}

void ExpertPanel::refresh() {
    const QString n = state_.notice();
    notice_->setText(n);
    notice_->setVisible(!n.isEmpty());
    summary_->setText(summary());
    summary_->setVisible(!state_.empty());
    const ExpertState::TokenRoute* route = state_.route_of(shown_index());
    grid_->set_state(&state_, route);
    grid_->setVisible(!state_.empty());
    token_->setText(token_line());
    token_->setVisible(!state_.empty());
    const int k = state_.n_used(), nl = state_.n_layer();
    table_->setVisible(route != nullptr);
    table_->clear();
    if (!route) {
        table_->setRowCount(0);
        table_->setColumnCount(0);
        return;
    }
    table_->setColumnCount(1 + k);
    QStringList headers{QStringLiteral("Layer")};
    for (int j = 0; j < k; ++j) headers << QStringLiteral("Expert %1 (weight)").arg(j + 1);
    table_->setHorizontalHeaderLabels(headers);
    table_->setRowCount(nl);
    for (int il = 0; il < nl; ++il) {
        table_->setItem(il, 0, new QTableWidgetItem(QString::number(il)));
        for (int j = 0; j < k; ++j) {
            const int32_t e = route->experts[size_t(il * k + j)];
            const QString text = e < 0 ? QStringLiteral("— (layer not run)")
                                       : QStringLiteral("%1 (%2)").arg(e).arg(
                                             double(route->weights[size_t(il * k + j)]), 0, 'f', 3);
            table_->setItem(il, 1 + j, new QTableWidgetItem(text));
        }
    }
}

}  // namespace fluoro::ui
