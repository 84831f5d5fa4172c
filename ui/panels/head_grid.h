// The all-heads small multiples of one layer: each head's latest snapshot as a tiny heatmap, or,
// for heads without one, bars of its sparsity stats (entropy / ln keys, top-k mass, sink mass).
// Every cell spans the same query rows and key columns (those of all the layer's snapshots), so a
// head that has only some rows — its earlier ones dropped when the view fell behind — shows them
// where they are, not stretched over the cell. Clicking a cell picks that head.
#pragma once

#include <QImage>
#include <QWidget>
#include <vector>

#include "panels/attention_model.h"

namespace fluoro::ui {

class HeadGrid : public QWidget {
    Q_OBJECT
  public:
    explicit HeadGrid(QWidget* parent = nullptr);

    void set_layer(const AttentionState* state, int layer, int selected_head);
    int head_at(QPoint pos) const;  // -1 outside the cells
    // Where head `head`'s snapshot is drawn (empty when it has none).
    QRectF image_rect(int head) const;
    int heads() const { return int(cells_.size()); }
    QSize sizeHint() const override { return {320, 200}; }

  signals:
    void head_clicked(int head);

  protected:
    void paintEvent(QPaintEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;

  private:
    struct Cell {
        std::shared_ptr<const AttentionSnapshot> source;  // what `image` shows
        QImage image;                                     // null: no snapshot for this head
        const AttentionHeadStats* stats = nullptr;
    };
    QRect cell_rect(int head) const;
    int columns() const;

    std::vector<Cell> cells_;
    // Query rows [row0, row1) and key positions [col0, col1) of the layer's snapshots.
    int64_t row0_ = 0, row1_ = 0, col0_ = 0, col1_ = 0;
    int layer_ = 0, selected_ = 0;
    int64_t n_keys_ = 0;
};

}  // namespace fluoro::ui
