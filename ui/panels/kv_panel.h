// The KV cache dock: the block pool as a grid of cells colored by state (with a legend and counts),
// each sequence's block table, KV bytes used against the budget, and used bytes over the run; when
// the KV policy evicts, the latest eviction's numbers and the strip of kept/evicted positions.
#pragma once

#include <memory>

#include "panels/event_panel.h"
#include "panels/kv_model.h"

class QLabel;
class QProgressBar;
class QStackedWidget;
class QTableView;

namespace fluoro::ui {

class KvEvictionStrip;
class LineChart;

class KvGrid : public QWidget {
    Q_OBJECT
  public:
    explicit KvGrid(QWidget* parent = nullptr);
    void set_snapshot(std::shared_ptr<const KvSnapshot> snapshot);
    int block_at(QPoint pos) const;  // -1 outside
    QString tooltip_at(QPoint pos) const;
    QSize sizeHint() const override { return {420, 180}; }

  protected:
    void paintEvent(QPaintEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;

  private:
    int cell_size() const;
    int columns() const;
    int legend_height() const;
    std::shared_ptr<const KvSnapshot> snapshot_;
};

class KvPanel : public EventPanel {
    Q_OBJECT
  public:
    explicit KvPanel(QWidget* parent = nullptr);

    QString panel_id() const override { return QStringLiteral("kv"); }
    QString title() const override { return QStringLiteral("KV cache"); }
    void consume(const std::vector<Event>& batch) override;
    void reset() override;

    const KvState& state() const { return state_; }
    KvBlockTableModel* block_model() const { return model_; }
    KvGrid* grid() const { return grid_; }
    LineChart* chart() const { return chart_; }
    QString notice() const;       // "" when the pool is shown
    QString budget_text() const;  // the bytes-used bar's text
    QString summary() const;      // the line under it: blocks, bytes per token, window storage
    KvEvictionStrip* eviction_strip() const { return strip_; }
    QString eviction_text() const;  // "" when the run evicted nothing

  private:
    void refresh();
    void refresh_evictions();

    KvState state_;
    QStackedWidget* stack_ = nullptr;
    QLabel* notice_ = nullptr;
    KvGrid* grid_ = nullptr;
    QLabel* summary_ = nullptr;
    QLabel* evictions_ = nullptr;
    KvEvictionStrip* strip_ = nullptr;
    QProgressBar* budget_ = nullptr;
    QTableView* table_ = nullptr;
    KvBlockTableModel* model_ = nullptr;
    LineChart* chart_ = nullptr;
    int used_series_ = 0;
};

}  // namespace fluoro::ui
