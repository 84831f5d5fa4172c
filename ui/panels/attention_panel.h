// The attention dock: layer and head pickers, the selected head's query × key heatmap, all heads of
// the layer as small multiples, and per-head sparsity readouts. Changing the layer or head asks the
// engine (tag "attention") to capture that layer's heads from the next step.
#pragma once

#include "panels/attention_model.h"
#include "panels/event_panel.h"

class QLabel;
class QPushButton;
class QSpinBox;
class QStackedWidget;
class QTableView;
class QTimer;

namespace fluoro::ui {

class AttentionHeatmap;
class HeadGrid;

class AttentionPanel : public EventPanel {
    Q_OBJECT
  public:
    // Query rows per step requested with the capture: the decode row, or a prefill's tail.
    static constexpr int64_t kCaptureRows = 32;

    explicit AttentionPanel(QWidget* parent = nullptr);

    QString panel_id() const override { return QStringLiteral("attention"); }
    QString title() const override { return QStringLiteral("Attention"); }
    void consume(const std::vector<Event>& batch) override;
    void reset() override;
    // Outlines the picked generated token (its key position) in the heatmap.
    void select_token(uint64_t run, int64_t index) override;

    // What the user does with the pickers: show `layer` / `head` and request their capture.
    void choose_layer(int layer);
    void choose_head(int head);
    int layer() const { return layer_; }
    int head() const { return head_; }
    // The capture request for the layer on screen (what choose_layer emits).
    SetAttentionCapture capture_request() const;

    const AttentionState& state() const { return state_; }
    AttentionStatsModel* stats_model() const { return stats_model_; }
    AttentionHeatmap* heatmap() const { return heatmap_; }
    HeadGrid* head_grid() const { return grid_; }
    // The text shown instead of the heatmap ("" when the heatmap is shown).
    QString notice() const;

  private:
    // Redraws what changed; the small multiples (an image per head) at most every kGridMs unless
    // `grid_now` (a user action).
    void refresh(bool grid_now = false);
    void refresh_grid();
    static constexpr int kGridMs = 250;
    void request_capture();

    AttentionState state_;
    int layer_ = 0, head_ = 0;
    QSpinBox* layer_box_ = nullptr;
    QSpinBox* head_box_ = nullptr;
    QPushButton* capture_ = nullptr;
    QLabel* info_ = nullptr;
    QStackedWidget* heat_stack_ = nullptr;
    QLabel* heat_notice_ = nullptr;
    AttentionHeatmap* heatmap_ = nullptr;
    HeadGrid* grid_ = nullptr;
    QTableView* table_ = nullptr;
    AttentionStatsModel* stats_model_ = nullptr;
    QTimer* grid_timer_ = nullptr;
    bool grid_pending_ = false;
};

}  // namespace fluoro::ui
