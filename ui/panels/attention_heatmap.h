// The query × key heatmap of one attention snapshot: log color scale with its legend, token labels
// on both axes, the KV policy's marks under the keys (evicted positions grey and hatched), and a
// hover tooltip with both tokens and the weight. The image is built once per snapshot, not per
// paint.
#pragma once

#include <QImage>
#include <QWidget>
#include <memory>
#include <vector>

#include "panels/attention_model.h"

namespace fluoro::ui {

// The log-scale range of a snapshot's weights: [lo, hi] with hi the largest weight and lo four
// decades below it (at least 1e-7).
struct LogRange {
    double lo = 1e-4, hi = 1.0;
    double position(double weight) const;  // 0..1 on the log scale; < 0 for a zero weight
};
LogRange log_range(const AttentionSnapshot& s);
// One pixel per weight (n_cols × n_rows); zero weights (masked keys) transparent, or grey in the
// columns flagged in `gone` (positions the KV policy evicted: nobody can attend to them any more).
QImage attention_image(const AttentionSnapshot& s, const LogRange& range,
                       const std::vector<bool>& gone = {});
// The same with at most `max_cols` columns and `max_rows` rows (0: no limit): when the snapshot
// has more keys, pixel column x shows the largest weight of keys [x * n / max_cols, (x + 1) * n /
// max_cols), and likewise for query rows (max pooling: a spike on one key among thousands stays
// visible; a plain downscale samples it away). Grey where a block holds only evicted, unattended
// keys.
QImage attention_image_pooled(const AttentionSnapshot& s, const LogRange& range,
                              const std::vector<bool>& gone, int max_cols, int max_rows = 0);
// The keys pixel column x of a pooled image covers (first, last, as column indices).
std::pair<int64_t, int64_t> pooled_block(int64_t n_cols, int pooled_cols, int x);

class AttentionHeatmap : public QWidget {
    Q_OBJECT
  public:
    explicit AttentionHeatmap(QWidget* parent = nullptr);

    // `state` labels the tokens and marks keys; it must outlive this widget's use of it.
    void set_data(std::shared_ptr<const AttentionSnapshot> snapshot, const AttentionState* state);
    const AttentionSnapshot* snapshot() const { return snapshot_.get(); }
    // Outlines the query row and key column of token position `pos` (-1: none).
    void set_highlight(int64_t pos);
    int64_t highlight() const { return highlight_; }
    // The hover text at widget position `pos` (empty outside the cells).
    QString tooltip_at(QPoint pos) const;
    // Columns of the image drawn: the keys, or fewer when they are max-pooled to the width; rows
    // likewise: the query rows, or fewer when they are max-pooled to the height.
    int image_columns() const { return image_.width(); }
    int image_rows() const { return image_.height(); }
    const QImage& image() const { return image_; }
    QSize sizeHint() const override { return {560, 260}; }
    QSize minimumSizeHint() const override { return {240, 140}; }

  protected:
    void paintEvent(QPaintEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

  private:
    void compute_layout();
    void rebuild_image();  // for the snapshot and the cells' width (pooled when narrower)
    QRectF cells_;         // where the weights are drawn
    int label_w_ = 0, key_label_h_ = 0;
    std::shared_ptr<const AttentionSnapshot> snapshot_;
    const AttentionState* state_ = nullptr;
    QImage image_;
    QSize pooled_for_;  // the cells' size image_ was built for
    LogRange range_;
    int64_t highlight_ = -1;
};

}  // namespace fluoro::ui
