#include "panels/head_grid.h"

#include <QMouseEvent>
#include <QPainter>
#include <algorithm>
#include <cmath>

#include "panels/attention_heatmap.h"
#include "panels/panel_util.h"

namespace fluoro::ui {

HeadGrid::HeadGrid(QWidget* parent) : QWidget(parent) {
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void HeadGrid::set_layer(const AttentionState* state, int layer, int selected_head) {
    layer_ = layer;
    selected_ = selected_head;
    n_keys_ = state && state->stats() ? state->stats()->n_keys : 0;
    const int n = state ? state->n_heads() : 0;
    cells_.resize(size_t(n));
    for (int h = 0; h < n; ++h) {
        Cell& c = cells_[size_t(h)];
        auto s = state->snapshot(layer, h);
        if (s != c.source) {  // images are rebuilt only for heads with new rows
            c.source = s;
            c.image = s ? attention_image(*s, log_range(*s)) : QImage();
        }
        c.stats = state->head_stats(layer, h);
    }
    bool any = false;
    for (const Cell& c : cells_) {
        if (!c.source) continue;
        const AttentionSnapshot& s = *c.source;
        const int64_t r0 = s.first_row, r1 = s.first_row + s.n_rows;
        const int64_t c0 = s.key_begin, c1 = s.key_begin + s.n_cols;
        row0_ = any ? std::min(row0_, r0) : r0;
        row1_ = any ? std::max(row1_, r1) : r1;
        col0_ = any ? std::min(col0_, c0) : c0;
        col1_ = any ? std::max(col1_, c1) : c1;
        any = true;
    }
    update();
}

QRectF HeadGrid::image_rect(int head) const {
    if (head < 0 || head >= int(cells_.size()) || !cells_[size_t(head)].source) return {};
    const AttentionSnapshot& s = *cells_[size_t(head)].source;
    const QRect inner = cell_rect(head).adjusted(2, fontMetrics().height() + 1, -2, -2);
    const double rows = double(std::max<int64_t>(row1_ - row0_, 1));
    const double cols = double(std::max<int64_t>(col1_ - col0_, 1));
    const double y0 = double(s.first_row - row0_) / rows, y1 = y0 + double(s.n_rows) / rows;
    const double x0 = double(s.key_begin - col0_) / cols, x1 = x0 + double(s.n_cols) / cols;
    return QRectF(inner.left() + x0 * inner.width(), inner.top() + y0 * inner.height(),
                  (x1 - x0) * inner.width(), (y1 - y0) * inner.height());
}

int HeadGrid::columns() const {
    const int n = std::max(1, int(cells_.size()));
    const double aspect = double(std::max(width(), 1)) / double(std::max(height(), 1));
    return std::clamp(int(std::ceil(std::sqrt(n * aspect))), 1, n);
}

QRect HeadGrid::cell_rect(int head) const {
    const int cols = columns();
    const int rows = (int(cells_.size()) + cols - 1) / cols;
    const int top = fontMetrics().height() + 6;
    const int cw = std::max(8, (width() - 4) / cols);
    const int ch = std::max(8, (height() - top - 2) / std::max(rows, 1));
    return QRect(2 + (head % cols) * cw, top + (head / cols) * ch, cw - 3, ch - 3);
}

int HeadGrid::head_at(QPoint pos) const {
    for (int h = 0; h < int(cells_.size()); ++h)
        if (cell_rect(h).contains(pos)) return h;
    return -1;
}

void HeadGrid::mousePressEvent(QMouseEvent* event) {
    const int h = head_at(event->position().toPoint());
    if (h >= 0) emit head_clicked(h);
}

void HeadGrid::paintEvent(QPaintEvent*) {
    QPainter p(this);
    const QPalette pal = palette();
    p.fillRect(rect(), pal.color(QPalette::Base));
    const QFontMetrics fm(font());
    p.setPen(pal.color(QPalette::Text));
    p.drawText(QPointF(4, fm.ascent() + 2), QStringLiteral("Layer %1 · all heads").arg(layer_));
    if (cells_.empty()) return;
    for (int h = 0; h < int(cells_.size()); ++h) {
        const QRect r = cell_rect(h);
        const Cell& c = cells_[size_t(h)];
        p.fillRect(r, pal.color(QPalette::AlternateBase));
        const QRect inner = r.adjusted(2, fm.height() + 1, -2, -2);
        if (!c.image.isNull()) {
            // A tall snapshot is squeezed, a single row stretched into a band.
            p.drawImage(image_rect(h), c.image);
        } else if (c.stats) {
            const double entropy_norm =
                n_keys_ > 1 ? double(c.stats->entropy) / std::log(double(n_keys_)) : 0.0;
            const double values[3] = {entropy_norm, c.stats->top_k_mass, c.stats->sink_mass};
            const int bw = std::max(2, inner.width() / 3 - 2);
            for (int i = 0; i < 3; ++i) {
                const int bh = int(std::clamp(values[i], 0.0, 1.0) * inner.height());
                p.fillRect(QRect(inner.left() + i * (bw + 2), inner.bottom() - bh, bw, bh),
                           category_color(size_t(i)));
            }
        }
        p.setPen(h == selected_ ? QPen(pal.color(QPalette::Highlight), 2)
                                : QPen(pal.color(QPalette::Mid)));
        p.setBrush(Qt::NoBrush);
        p.drawRect(r);
        p.setPen(pal.color(QPalette::Text));
        p.drawText(r.adjusted(3, 0, 0, 0), Qt::AlignLeft | Qt::AlignTop,
                   QStringLiteral("h%1").arg(h));
    }
    // Key to the bars when some head shows stats instead of a snapshot.
    const bool any_bars = std::any_of(cells_.begin(), cells_.end(),
                                      [](const Cell& c) { return c.image.isNull() && c.stats; });
    if (any_bars) {
        const QString key[3] = {QStringLiteral("entropy/ln keys"), QStringLiteral("top-k mass"),
                                QStringLiteral("sink mass")};
        int x = width() - 4;
        for (int i = 2; i >= 0; --i) {
            x -= fm.horizontalAdvance(key[i]) + 18;
            p.fillRect(QRect(x, 4, 10, fm.ascent() - 2), category_color(size_t(i)));
            p.setPen(pal.color(QPalette::Text));
            p.drawText(QPoint(x + 13, fm.ascent() + 2), key[i]);
        }
    }
}

}  // namespace fluoro::ui
