// The all-heads small multiples of one layer: each head's latest snapshot as a tiny heatmap, or,
// for heads without one, bars of its sparsity stats (entropy / ln keys, top-k mass, sink mass).
// Clicking a cell picks that head.
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
    int layer_ = 0, selected_ = 0;
    int64_t n_keys_ = 0;
};

}  // namespace fluoro::ui
