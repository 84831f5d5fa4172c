#include "panels/attention_heatmap.h"

#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "panels/panel_util.h"

namespace fluoro::ui {

namespace {
constexpr int kMarkStrip = 7;    // px of KV policy marks under the keys
constexpr int kLegendW = 100;    // px of the color legend at the right
constexpr double kMaxRowH = 26;  // px; a single decode row stays a strip, not a wall
}  // namespace

double LogRange::position(double weight) const {
    if (!(weight > 0)) return -1.0;
    const double l = std::log10(std::max(weight, lo));
    const double span = std::log10(hi) - std::log10(lo);
    return span > 0 ? (l - std::log10(lo)) / span : 1.0;
}

LogRange log_range(const AttentionSnapshot& s) {
    LogRange r;
    float hi = 0;
    for (float w : s.weights) hi = std::max(hi, w);
    r.hi = hi > 0 ? double(hi) : 1.0;
    r.lo = std::max(r.hi * 1e-4, 1e-7);
    return r;
}

QImage attention_image(const AttentionSnapshot& s, const LogRange& range,
                       const std::vector<bool>& gone) {
    // A snapshot from a file is not trusted: a shape its weights do not fill, or one too large
    // for an image (QImage refuses it and has no scan lines), draws nothing.
    if (!s.shape_ok() || s.n_cols > INT32_MAX || s.n_rows > INT32_MAX) return QImage();
    QImage img(int(std::max<int64_t>(s.n_cols, 1)), int(std::max<int64_t>(s.n_rows, 1)),
               QImage::Format_ARGB32);
    if (img.isNull()) return img;
    img.fill(Qt::transparent);
    const QRgb grey = qRgba(128, 128, 128, 150);
    for (int64_t r = 0; r < s.n_rows; ++r) {
        auto* line = reinterpret_cast<QRgb*>(img.scanLine(int(r)));
        for (int64_t c = 0; c < s.n_cols; ++c) {
            const double t = range.position(s.weights[size_t(r * s.n_cols + c)]);
            if (t >= 0)
                line[c] = heat_color(t).rgba();
            else if (size_t(c) < gone.size() && gone[size_t(c)])
                line[c] = grey;
        }
    }
    return img;
}

std::pair<int64_t, int64_t> pooled_block(int64_t n_cols, int pooled_cols, int x) {
    const int64_t w = std::max(1, pooled_cols);
    const int64_t first = std::min(n_cols - 1, int64_t(x) * n_cols / w);
    const int64_t last = std::max(first, std::min(n_cols - 1, (int64_t(x) + 1) * n_cols / w - 1));
    return {first, last};
}

QImage attention_image_pooled(const AttentionSnapshot& s, const LogRange& range,
                              const std::vector<bool>& gone, int max_cols, int max_rows) {
    const bool pool_cols = max_cols > 0 && s.n_cols > max_cols;
    const bool pool_rows = max_rows > 0 && s.n_rows > max_rows;
    if (!pool_cols && !pool_rows) return attention_image(s, range, gone);
    if (!s.shape_ok() || (!pool_rows && s.n_rows > INT32_MAX) ||
        (!pool_cols && s.n_cols > INT32_MAX))
        return QImage();
    const int w = pool_cols ? max_cols : int(std::max<int64_t>(s.n_cols, 1));
    const int h = pool_rows ? max_rows : int(std::max<int64_t>(s.n_rows, 1));
    QImage img(w, h, QImage::Format_ARGB32);
    if (img.isNull()) return img;
    img.fill(Qt::transparent);
    const QRgb grey = qRgba(128, 128, 128, 150);
    std::vector<float> best(static_cast<size_t>(w));
    std::vector<std::pair<int64_t, int64_t>> col_blocks(static_cast<size_t>(w));
    std::vector<bool> block_gone(static_cast<size_t>(w), false);
    for (int x = 0; x < w; ++x) {
        col_blocks[size_t(x)] =
            pool_cols ? pooled_block(s.n_cols, w, x) : std::pair<int64_t, int64_t>{x, x};
        for (int64_t c = col_blocks[size_t(x)].first; c <= col_blocks[size_t(x)].second; ++c)
            if (size_t(c) < gone.size() && gone[size_t(c)]) block_gone[size_t(x)] = true;
    }
    for (int y = 0; y < h; ++y) {
        const auto [r0, r1] =
            pool_rows ? pooled_block(s.n_rows, h, y) : std::pair<int64_t, int64_t>{y, y};
        std::fill(best.begin(), best.end(), 0.0f);
        for (int64_t r = r0; r <= r1 && r < s.n_rows; ++r) {
            const float* row = s.weights.data() + r * s.n_cols;
            for (int x = 0; x < w; ++x)
                for (int64_t c = col_blocks[size_t(x)].first;
                     c <= col_blocks[size_t(x)].second && c < s.n_cols; ++c)
                    best[size_t(x)] = std::max(best[size_t(x)], row[c]);
        }
        auto* line = reinterpret_cast<QRgb*>(img.scanLine(y));
        for (int x = 0; x < w; ++x) {
            const double t = range.position(best[size_t(x)]);
            if (t >= 0)
                line[x] = heat_color(t).rgba();
            else if (block_gone[size_t(x)])
                line[x] = grey;
        }
    }
    return img;
}

namespace {

// Columns of `s` whose key position the KV policy evicted.
std::vector<bool> evicted_columns(const AttentionSnapshot& s, const AttentionState* state) {
    std::vector<bool> gone(size_t(std::max<int64_t>(s.n_cols, 0)), false);
    if (!state || !state->slot_history().any()) return gone;
    for (int64_t c = 0; c < s.n_cols; ++c)
        gone[size_t(c)] = state->slot_history().latest().evicted(s.key_begin + c);
    return gone;
}

// Diagonal hatch over `r`, drawn as lines (SVG viewers drop pattern brushes).
void hatch(QPainter& p, const QRectF& r, const QColor& color) {
    p.save();
    p.setClipRect(r);
    p.setPen(QPen(color, 1));
    const double step = 6;
    for (double x = r.left() - r.height(); x < r.right(); x += step)
        p.drawLine(QPointF(x, r.bottom()), QPointF(x + r.height(), r.top()));
    p.restore();
}

}  // namespace

AttentionHeatmap::AttentionHeatmap(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void AttentionHeatmap::set_data(std::shared_ptr<const AttentionSnapshot> snapshot,
                                const AttentionState* state) {
    state_ = state;
    if (snapshot && !snapshot->shape_ok()) snapshot = nullptr;  // malformed: nothing to draw
    if (snapshot != snapshot_) {
        snapshot_ = std::move(snapshot);
        if (snapshot_) range_ = log_range(*snapshot_);
        pooled_for_ = {};  // rebuilt by compute_layout
    }
    compute_layout();
    update();
}

void AttentionHeatmap::rebuild_image() {
    const QSize size(int(cells_.width()), int(cells_.height()));
    if (size == pooled_for_) return;
    pooled_for_ = size;
    image_ = snapshot_
                 ? attention_image_pooled(*snapshot_, range_, evicted_columns(*snapshot_, state_),
                                          size.width(), size.height())
                 : QImage();
}

void AttentionHeatmap::set_highlight(int64_t pos) {
    highlight_ = pos;
    update();
}

void AttentionHeatmap::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    compute_layout();
}

void AttentionHeatmap::compute_layout() {
    const QFontMetrics fm(font());
    label_w_ = fm.horizontalAdvance(QStringLiteral("#0000 MMMMMMMMMM"));
    key_label_h_ = std::min(fm.horizontalAdvance(QStringLiteral("MMMMMMMMMM")), height() / 4);
    const double top = fm.height() * 2 + 8;  // title line, then the legend's caption
    QRectF area(label_w_ + 6, top, width() - label_w_ - 12 - kLegendW,
                height() - top - key_label_h_ - kMarkStrip - 8);
    if (snapshot_ && snapshot_->n_rows > 0)
        area.setHeight(std::min(area.height(), kMaxRowH * double(snapshot_->n_rows)));
    cells_ = area.width() > 0 && area.height() > 0 ? area : QRectF();
    rebuild_image();
}

QString AttentionHeatmap::tooltip_at(QPoint pos) const {
    if (!snapshot_ || cells_.isEmpty() || !cells_.contains(pos)) return {};
    const AttentionSnapshot& s = *snapshot_;
    // The block of rows and of keys under the pointer (one each when nothing is pooled), and in
    // it the most attended (query, key) pair with its exact weight.
    // (The 1e-9 keeps a pixel's own index when frac × pixels lands a rounding error below it.)
    const auto block = [&](int64_t n, int pixels, double frac) -> std::pair<int64_t, int64_t> {
        if (pixels <= 0 || pixels >= n) {
            const int64_t i = std::clamp<int64_t>(int64_t(frac * double(n) + 1e-9), 0, n - 1);
            return {i, i};
        }
        return pooled_block(n, pixels, std::clamp(int(frac * pixels + 1e-9), 0, pixels - 1));
    };
    const auto [c0, c1] =
        block(s.n_cols, image_.width(), (pos.x() - cells_.left()) / cells_.width());
    const auto [r0, r1] =
        block(s.n_rows, image_.height(), (pos.y() - cells_.top()) / cells_.height());
    int64_t row = r0, col = c0;
    for (int64_t r = r0; r <= r1; ++r)
        for (int64_t c = c0; c <= c1; ++c)
            if (s.weights[size_t(r * s.n_cols + c)] > s.weights[size_t(row * s.n_cols + col)]) {
                row = r;
                col = c;
            }
    QString pooled;
    if (r1 > r0)
        pooled += QStringLiteral("\nqueries #%1–#%2 share this row (max-pooled)")
                      .arg(s.first_row + r0)
                      .arg(s.first_row + r1);
    if (c1 > c0)
        pooled += QStringLiteral("\nkeys #%1–#%2 share this column (max-pooled)")
                      .arg(s.key_begin + c0)
                      .arg(s.key_begin + c1);
    if (!pooled.isEmpty()) pooled += QStringLiteral(": the most attended is shown");
    const float w = s.weights[size_t(row * s.n_cols + col)];
    const int64_t q = s.first_row + row;
    QString text = QStringLiteral("query #%1 “%2”\nkey #%3 “%4”\nweight %5")
                       .arg(q)
                       .arg(state_ ? state_->key_label(q, 40) : QString())
                       .arg(s.key_begin + col)
                       .arg(state_ ? state_->key_label(s.key_begin + col, 40) : QString())
                       .arg(double(w), 0, 'g', 4);
    if (state_)
        if (auto mark = state_->key_mark(s.key_begin + col))
            text += QStringLiteral("\nKV policy: %1").arg(kv_state_label(*mark));
    return text + pooled;
}

void AttentionHeatmap::mouseMoveEvent(QMouseEvent* event) {
    const QString text = tooltip_at(event->position().toPoint());
    if (text.isEmpty())
        QToolTip::hideText();
    else
        QToolTip::showText(event->globalPosition().toPoint(), text, this);
}

void AttentionHeatmap::paintEvent(QPaintEvent*) {
    QPainter p(this);
    const QPalette pal = palette();
    p.fillRect(rect(), pal.color(QPalette::Base));
    if (!snapshot_ || cells_.isEmpty()) return;
    const AttentionSnapshot& s = *snapshot_;
    const QFontMetrics fm(font());
    p.setPen(pal.color(QPalette::Text));
    p.drawText(QPointF(6, fm.ascent() + 3),
               QStringLiteral("layer %1 · head %2 · step %3 · queries %4–%5 × keys %6–%7")
                   .arg(s.layer)
                   .arg(s.head)
                   .arg(s.step)
                   .arg(s.first_row)
                   .arg(s.first_row + s.n_rows - 1)
                   .arg(s.key_begin)
                   .arg(s.key_begin + s.n_cols - 1));

    // Cells: masked keys (weight 0) show the base color, so the causal edge is visible.
    p.fillRect(cells_, pal.color(QPalette::AlternateBase));
    p.setRenderHint(QPainter::SmoothPixmapTransform, false);
    p.drawImage(cells_, image_);
    p.setPen(pal.color(QPalette::Mid));
    p.setBrush(Qt::NoBrush);
    p.drawRect(cells_);
    if (highlight_ >= 0) {  // the token picked elsewhere: its row as a query, its column as a key
        const double hw = cells_.width() / double(s.n_cols),
                     hh = cells_.height() / double(s.n_rows);
        p.setPen(QPen(pal.color(QPalette::Highlight), 2));
        if (highlight_ >= s.first_row && highlight_ < s.first_row + s.n_rows)
            p.drawRect(QRectF(cells_.left(), cells_.top() + double(highlight_ - s.first_row) * hh,
                              cells_.width(), hh));
        if (highlight_ >= s.key_begin && highlight_ < s.key_begin + s.n_cols)
            p.drawRect(QRectF(cells_.left() + double(highlight_ - s.key_begin) * hw, cells_.top(),
                              hw, cells_.height()));
    }

    const double cw = cells_.width() / double(s.n_cols);
    const double ch = cells_.height() / double(s.n_rows);
    // KV policy marks: a strip under the keys; evicted columns hatched grey, run by run.
    const double strip_y = cells_.bottom() + 2;
    QColor hatch_color = pal.color(QPalette::Text);
    hatch_color.setAlpha(90);
    int64_t evicted_from = -1;
    for (int64_t c = 0; c <= s.n_cols && state_; ++c) {
        const auto mark = c < s.n_cols ? state_->key_mark(s.key_begin + c) : std::nullopt;
        const bool evicted = mark == KvBlockState::Evicted;
        if (evicted && evicted_from < 0) evicted_from = c;
        if (!evicted && evicted_from >= 0) {
            hatch(p,
                  QRectF(cells_.left() + double(evicted_from) * cw, cells_.top(),
                         std::max(double(c - evicted_from) * cw, 1.0), cells_.height()),
                  hatch_color);
            evicted_from = -1;
        }
        if (!mark) continue;
        const QRectF col(cells_.left() + double(c) * cw, strip_y, std::max(cw, 1.0), kMarkStrip);
        p.fillRect(col, evicted ? QColor(128, 128, 128) : kv_state_color(*mark, pal));
    }

    // Query labels (left), every row that has room.
    p.setPen(pal.color(QPalette::Text));
    const int row_step = std::max(1, int(std::ceil((fm.height() + 1) / std::max(ch, 0.01))));
    for (int64_t r = 0; r < s.n_rows; r += row_step) {
        const int64_t q = s.first_row + r;
        const QRectF box(2, cells_.top() + double(r) * ch, label_w_,
                         std::max(ch, double(fm.height())));
        const QString label =
            QStringLiteral("#%1 %2").arg(q).arg(state_ ? state_->key_label(q, 10) : QString());
        p.drawText(box, Qt::AlignRight | Qt::AlignVCenter,
                   fm.elidedText(label, Qt::ElideRight, label_w_));
    }
    // Key labels (bottom), rotated, every column that has room.
    const int col_step = std::max(1, int(std::ceil((fm.height() + 1) / std::max(cw, 0.01))));
    for (int64_t c = 0; c < s.n_cols; c += col_step) {
        p.save();
        p.translate(cells_.left() + (double(c) + 0.5) * cw + fm.ascent() / 2.0,
                    strip_y + kMarkStrip + 3);
        p.rotate(90);
        const QString label = state_ ? state_->key_label(s.key_begin + c, 10)
                                     : QStringLiteral("#%1").arg(s.key_begin + c);
        p.drawText(QPointF(0, 0), fm.elidedText(label, Qt::ElideRight, key_label_h_));
        p.restore();
    }

    // Legend: the log color scale with a tick per decade.
    const QRectF bar(width() - kLegendW + 4, cells_.top(), 12, std::max(cells_.height(), 90.0));
    QLinearGradient grad(bar.bottomLeft(), bar.topLeft());
    for (int i = 0; i <= 8; ++i) grad.setColorAt(i / 8.0, heat_color(i / 8.0));
    p.fillRect(bar, grad);
    p.setPen(pal.color(QPalette::Mid));
    p.drawRect(bar);
    p.setPen(pal.color(QPalette::Text));
    QFont small = font();
    small.setPointSizeF(std::max(6.0, font().pointSizeF() * 0.85));
    p.setFont(small);
    const QFontMetrics sfm(small);
    const int d_lo = int(std::ceil(std::log10(range_.lo) - 1e-9));
    const int d_hi = int(std::floor(std::log10(range_.hi) + 1e-9));
    for (int d = d_lo; d <= d_hi; ++d) {
        const double y = bar.bottom() - range_.position(std::pow(10.0, d)) * bar.height();
        p.drawLine(QPointF(bar.right(), y), QPointF(bar.right() + 3, y));
        p.drawText(QPointF(bar.right() + 5, y + sfm.ascent() / 2.0 - 1),
                   QStringLiteral("1e%1").arg(d));
    }
    p.drawText(QPointF(bar.left(), bar.top() - 4), QStringLiteral("weight (log)"));
    // Marks legend, only when the KV policy marked something.
    bool any_mark = false;
    for (int64_t c = 0; c < s.n_cols && state_ && !any_mark; ++c)
        any_mark = state_->key_mark(s.key_begin + c).has_value();
    if (any_mark) {
        double y = bar.bottom() + sfm.height() * 1.6;
        for (KvBlockState st : {KvBlockState::Sink, KvBlockState::Heavy, KvBlockState::Evicted}) {
            p.fillRect(QRectF(bar.left(), y, 10, 8), st == KvBlockState::Evicted
                                                         ? QColor(128, 128, 128)
                                                         : kv_state_color(st, pal));
            p.drawText(QPointF(bar.left() + 13, y + 8), kv_state_label(st));
            y += sfm.height();
        }
    }
}

}  // namespace fluoro::ui
