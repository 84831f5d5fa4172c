// The experts dock, for a mixture-of-experts model: expert load per layer over the run as a
// layers × experts grid (color: the expert's share of the layer's token choices, relative to the
// busiest; hover: the counts), the picked token's experts outlined in it, and a table of that
// token's experts and router weights per layer. A dense model, or a run without routing, says so.
#pragma once

#include "panels/event_panel.h"
#include "panels/expert_model.h"

class QLabel;
class QTableWidget;

namespace fluoro::ui {

// layers (rows) × experts (columns), painted; the picked token's experts outlined.
class ExpertLoadGrid : public QWidget {
    Q_OBJECT
  public:
    explicit ExpertLoadGrid(QWidget* parent = nullptr);
    void set_state(const ExpertState* state, const ExpertState::TokenRoute* picked);
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override { return {120, 80}; }
    // The cell under `pos` as (layer, expert), (-1, -1) outside the grid.
    std::pair<int, int> cell_at(QPoint pos) const;
    QString tooltip_at(QPoint pos) const;
    static QSize maximumSizeHintFor(int layers);

  protected:
    void paintEvent(QPaintEvent* event) override;
    bool event(QEvent* event) override;

  private:
    QRect grid_rect() const;
    const ExpertState* state_ = nullptr;
    const ExpertState::TokenRoute* picked_ = nullptr;
};

class ExpertPanel : public EventPanel {
    Q_OBJECT
  public:
    explicit ExpertPanel(QWidget* parent = nullptr);

    QString panel_id() const override { return QStringLiteral("experts"); }
    QString title() const override { return QStringLiteral("Experts"); }
    void consume(const std::vector<Event>& batch) override;
    void reset() override;
    void select_token(uint64_t run, int64_t index) override;

    const ExpertState& state() const { return state_; }
    QString notice() const { return state_.notice(); }
    QString summary() const;     // the load's one-line summary
    QString token_line() const;  // what the picked token's table shows, in a line
    int64_t selected_index() const { return selected_; }
    // The token whose experts are shown: the picked one, else the latest one fed (-1: none).
    int64_t shown_index() const;
    const QTableWidget* token_table() const { return table_; }
    const ExpertLoadGrid* grid() const { return grid_; }

  private:
    void refresh();

    ExpertState state_;
    int64_t selected_ = -1;
    QLabel* notice_ = nullptr;
    QLabel* summary_ = nullptr;
    ExpertLoadGrid* grid_ = nullptr;
    QLabel* token_ = nullptr;
    QTableWidget* table_ = nullptr;
};

}  // namespace fluoro::ui
