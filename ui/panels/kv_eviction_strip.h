// The KV policy's evictions as a strip over the conversation's positions: the top bar is the cache
// now (each position kept as sink / heavy hitter / recent, evicted, or appended since the last
// eviction), below it one thin row per eviction of the run (what that eviction kept, what it
// evicted, what was gone before), latest at the bottom. Hover names the position and its fate.
#pragma once

#include <QWidget>
#include <optional>

#include "panels/kv_model.h"

namespace fluoro::ui {

// What a position looks like in a layout: kept for a reason, evicted (by the eviction drawn or
// before it), or appended after the last eviction (not judged yet).
enum class KvCell { Sink, Recent, Heavy, EvictedNow, EvictedBefore, Pending };
KvCell kv_cell(const KvSlotLayout& layout, const KvEviction* last, int64_t pos);
QColor kv_cell_color(KvCell cell, const QPalette& palette);
QString kv_cell_label(KvCell cell);

class KvEvictionStrip : public QWidget {
    Q_OBJECT
  public:
    explicit KvEvictionStrip(QWidget* parent = nullptr);
    // `state` must outlive this widget's use of it; null shows nothing.
    void set_state(const KvState* state);
    // Position under widget point `p` on the top bar or a row (nullopt outside).
    std::optional<int64_t> position_at(QPoint p) const;
    QString tooltip_at(QPoint p) const;
    // Eviction rows that fit (the latest ones).
    int visible_rows() const;
    QSize sizeHint() const override { return {420, 120}; }
    QSize minimumSizeHint() const override { return {200, 70}; }

  protected:
    void paintEvent(QPaintEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;

  private:
    QRectF bar_rect() const;   // the cache now
    QRectF rows_rect() const;  // one row per eviction
    double row_height() const;
    const KvState* state_ = nullptr;
};

}  // namespace fluoro::ui
