#include "panels/kv_eviction_strip.h"

#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <algorithm>
#include <cmath>

#include "panels/panel_util.h"

namespace fluoro::ui {

namespace {
constexpr double kBarH = 16, kLabelW = 74, kMaxRowH = 8;

bool holds(const std::vector<int64_t>& sorted, int64_t pos) {
    return std::binary_search(sorted.begin(), sorted.end(), pos);
}

// Draws positions [0, n) of one layout as runs of equal cells, `r` spanning `total` positions.
void draw_layout(QPainter& p, const QRectF& r, int64_t n, int64_t total, const KvSlotLayout& layout,
                 const KvEviction* last, const QPalette& pal) {
    if (n <= 0 || total <= 0) return;
    const double w = r.width() / double(total);
    for (int64_t i = 0; i < n;) {
        const KvCell c = kv_cell(layout, last, i);
        int64_t j = i + 1;
        while (j < n && kv_cell(layout, last, j) == c) ++j;
        p.fillRect(
            QRectF(r.left() + double(i) * w, r.top(), std::max(double(j - i) * w, 1.0), r.height()),
            kv_cell_color(c, pal));
        i = j;
    }
}

}  // namespace

KvCell kv_cell(const KvSlotLayout& layout, const KvEviction* last, int64_t pos) {
    const auto why = layout.reason(pos);
    if (!why) return KvCell::Pending;
    switch (*why) {
        case KvKeepReason::Sink:
            return KvCell::Sink;
        case KvKeepReason::Heavy:
            return KvCell::Heavy;
        case KvKeepReason::Recent:
            return KvCell::Recent;
        case KvKeepReason::Evicted:
            break;
    }
    return last && holds(last->evicted, pos) ? KvCell::EvictedNow : KvCell::EvictedBefore;
}

QColor kv_cell_color(KvCell cell, const QPalette& palette) {
    switch (cell) {
        case KvCell::Sink:
            return kv_state_color(KvBlockState::Sink, palette);
        case KvCell::Heavy:
            return kv_state_color(KvBlockState::Heavy, palette);
        case KvCell::Recent:
            return kv_state_color(KvBlockState::Used, palette);
        case KvCell::EvictedNow:
            return kv_state_color(KvBlockState::Evicted, palette);
        case KvCell::EvictedBefore:
            return QColor(128, 128, 128, 150);
        case KvCell::Pending: {
            QColor c = kv_state_color(KvBlockState::Used, palette);
            c.setAlpha(90);
            return c;
        }
    }
    return palette.color(QPalette::Mid);
}

QString kv_cell_label(KvCell cell) {
    switch (cell) {
        case KvCell::Sink:
            return QStringLiteral("kept: sink");
        case KvCell::Heavy:
            return QStringLiteral("kept: heavy hitter");
        case KvCell::Recent:
            return QStringLiteral("kept: recent");
        case KvCell::EvictedNow:
            return QStringLiteral("evicted (this eviction)");
        case KvCell::EvictedBefore:
            return QStringLiteral("evicted");
        case KvCell::Pending:
            return QStringLiteral("cached, appended since");
    }
    return {};
}

KvEvictionStrip::KvEvictionStrip(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
}

void KvEvictionStrip::set_state(const KvState* state) {
    state_ = state;
    update();
}

QRectF KvEvictionStrip::bar_rect() const {
    const double top = fontMetrics().height() + 8;  // the legend line
    return {kLabelW, top, std::max(width() - kLabelW - 6, 1.0), kBarH};
}

QRectF KvEvictionStrip::rows_rect() const {
    const QRectF bar = bar_rect();
    return {bar.left(), bar.bottom() + 6, bar.width(), std::max(height() - bar.bottom() - 8, 0.0)};
}

double KvEvictionStrip::row_height() const {
    const int n = state_ ? int(state_->evictions().size()) : 0;
    if (n == 0) return kMaxRowH;
    return std::clamp(rows_rect().height() / n, 2.0, kMaxRowH);
}

int KvEvictionStrip::visible_rows() const {
    const int n = state_ ? int(state_->evictions().size()) : 0;
    return std::min(n, int(rows_rect().height() / row_height()));
}

std::optional<int64_t> KvEvictionStrip::position_at(QPoint pt) const {
    const int64_t n = state_ ? state_->positions() : 0;
    const QRectF bar = bar_rect(), rows = rows_rect();
    if (n <= 0 || pt.x() < bar.left() || pt.x() >= bar.right()) return std::nullopt;
    if (!bar.contains(pt) && !rows.contains(pt)) return std::nullopt;
    return std::clamp<int64_t>(int64_t((pt.x() - bar.left()) / bar.width() * double(n)), 0, n - 1);
}

QString KvEvictionStrip::tooltip_at(QPoint pt) const {
    const auto pos = position_at(pt);
    if (!pos) return {};
    const auto& evs = state_->evictions();
    const KvEviction* shown = state_->last_eviction();
    KvSlotLayout layout = state_->slot_history().latest();
    QString where = QStringLiteral("now");
    if (!bar_rect().contains(pt)) {  // an eviction row
        const int row = int((pt.y() - rows_rect().top()) / row_height());
        const int first = int(evs.size()) - visible_rows();
        if (row < 0 || first + row >= int(evs.size())) return {};
        shown = &evs[size_t(first + row)];
        layout = KvSlotLayout();
        layout.apply(*shown);
        where = QStringLiteral("after the eviction at step %1").arg(shown->step);
    }
    QString text = QStringLiteral("position %1 · %2 · %3")
                       .arg(*pos)
                       .arg(kv_cell_label(kv_cell(layout, shown, *pos)), where);
    if (const auto slot = layout.slot_of(*pos); slot && *pos < state_->positions())
        text += QStringLiteral(" · cache slot %1").arg(*slot);
    for (const KvEviction& e : evs)
        if (holds(e.evicted, *pos)) text += QStringLiteral("\nevicted at step %1").arg(e.step);
    return text;
}

void KvEvictionStrip::mouseMoveEvent(QMouseEvent* event) {
    const QString text = tooltip_at(event->position().toPoint());
    if (text.isEmpty())
        QToolTip::hideText();
    else
        QToolTip::showText(event->globalPosition().toPoint(), text, this);
}

void KvEvictionStrip::paintEvent(QPaintEvent*) {
    QPainter p(this);
    const QPalette pal = palette();
    p.fillRect(rect(), pal.color(QPalette::Base));
    const int64_t n = state_ ? state_->positions() : 0;
    if (!state_ || state_->evictions().empty() || n <= 0) return;
    const QFontMetrics fm(font());
    // Legend.
    int x = 4;
    p.setPen(pal.color(QPalette::Text));
    for (KvCell c : {KvCell::Sink, KvCell::Heavy, KvCell::Recent, KvCell::EvictedNow,
                     KvCell::EvictedBefore, KvCell::Pending}) {
        static const char* names[] = {"sink", "recent", "heavy", "just evicted", "evicted", "new"};
        const QString label = QString::fromLatin1(names[int(c)]);
        p.fillRect(QRect(x, 4, 11, 11), kv_cell_color(c, pal));
        p.drawText(QPoint(x + 15, 4 + fm.ascent() - 1), label);
        x += 15 + fm.horizontalAdvance(label) + 12;
    }
    // The cache now.
    const QRectF bar = bar_rect();
    draw_layout(p, bar, n, n, state_->slot_history().latest(), state_->last_eviction(), pal);
    p.setPen(pal.color(QPalette::Mid));
    p.setBrush(Qt::NoBrush);
    p.drawRect(bar);
    p.setPen(pal.color(QPalette::Text));
    p.drawText(QRectF(2, bar.top(), kLabelW - 6, bar.height()), Qt::AlignRight | Qt::AlignVCenter,
               QStringLiteral("now"));
    // One row per eviction, the latest that fit.
    const auto& evs = state_->evictions();
    const int rows = visible_rows();
    const double rh = row_height();
    const QRectF area = rows_rect();
    const size_t first = evs.size() - size_t(rows);
    for (int r = 0; r < rows; ++r) {
        const KvEviction& e = evs[first + size_t(r)];
        KvSlotLayout l;
        l.apply(e);
        const QRectF row(area.left(), area.top() + double(r) * rh, area.width(),
                         std::max(rh - (rh >= 4 ? 1 : 0), 1.0));
        draw_layout(p, row, std::min(n, l.next()), n, l, &e, pal);
        if (rh * 2 >= fm.height() || r == rows - 1 || r == 0) {
            QFont small = font();
            small.setPointSizeF(std::max(6.0, font().pointSizeF() * 0.8));
            p.setFont(small);
            p.drawText(QRectF(2, row.top() - 4, kLabelW - 6, row.height() + 8),
                       Qt::AlignRight | Qt::AlignVCenter, QStringLiteral("step %1").arg(e.step));
            p.setFont(font());
        }
    }
}

}  // namespace fluoro::ui
